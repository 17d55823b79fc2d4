// Initial-sync benchmark, client-go side: how long and how much memory a process
// needs to sync one ConfigMap informer from a real kube-apiserver with client-go's
// SharedIndexInformer, as a client-go user builds it (a SharedInformerFactory
// scoped to one namespace). The Rust side is hack/bench/informer-sync; both print
// the same JSON line. hack/bench/informer-sync.sh runs the comparison.
//
//	informer-sync-go sync --namespace NS [--streaming] [--transform] [--json]
//	informer-sync-go server-state [--marker NS/NAME] [--probe NS] [--version]
//
// sync: one informer, no handlers, resync 0; timed from the factory's Start until
// WaitForCacheSync returns. In client-go 1.37 the factory's WaitForCacheSync no
// longer polls (every 100 ms, as cache.WaitForCacheSync still does): it waits on
// each informer's HasSyncedChecker().Done() channel (cache.WaitFor), closed when
// the queue has handed the initial list to the indexer. So the wait is woken, as on
// the Rust side.
//
// --streaming forces client-go's WatchListClient feature on (the initial list is a
// watch with sendInitialEvents=true), without it the feature is forced off (a LIST
// with resourceVersion="0" and limit=500, which the API server answers from its
// watch cache in one response: it ignores limit for RV="0"). The switch is the
// environment variable client-go reads once, KUBE_FEATURE_WatchListClient; it is
// set here before client-go reads it, and an already set, contradicting value is
// an error. In client-go 1.35+ the feature is on by default, so a client-go user
// gets the streaming path. The requests actually made are written to stderr.
//
// --json: rest.Config.ContentType = "application/json". Without it the typed
// clients (generated with gentype.PrefersProtobuf for built-in types) ask for
// "application/vnd.kubernetes.protobuf,application/json", as every client-go user's
// do; the JSON line's "wire" is the media type the server answered.
//
// --transform: a SetTransform (the factory's WithTransform) dropping
// metadata.managedFields before objects reach the queue and the indexer.
//
// server-state: the kube-apiserver's counters of LIST requests served from etcd
// and from the watch cache for ConfigMaps (apiserver_storage_list_total and
// apiserver_storage_list_returned_objects_total, storage="etcd"|"watchcache"),
// printed as "etcd_lists etcd_objects cache_lists cache_objects gate", gate being the
// server's ListFromCacheSnapshot feature gate (1, 0; -1 if not reported). --marker first
// creates or updates a ConfigMap (the write gives the watch cache a fresh snapshot,
// see hack/bench/informer-sync.sh); --probe NS instead lists NS in two pages of one
// object (the second with the continue token) and prints who served the second
// page: "etcd" or "watchcache".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Taken as early as the Rust side's `process_start` (the top of main).
var processStart = time.Now()

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: informer-sync-go sync|server-state [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "sync":
		err = syncCmd(os.Args[2:])
	case "server-state":
		err = serverStateCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer-sync-go:", err)
		os.Exit(1)
	}
}

// restConfig: the kubeconfig from KUBECONFIG (the default loading rules, as kubectl),
// with no client-side rate limit (QPS < 0 disables client-go's token bucket; the
// Rust side, kube, has none). Everything else is client-go's default, JSON included.
func restConfig() (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("client config from KUBECONFIG: %w", err)
	}
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	return cfg, nil
}

// requestLog records the method and URL of every request the informer makes, with
// the Accept header sent and the Content-Type answered: the wire format.
type requestLog struct {
	mu       sync.Mutex
	reqs     []string
	answered string // the media type of the first answer, without parameters
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		answer := "error"
		if err == nil {
			answer = resp.Header.Get("Content-Type")
		}
		l.mu.Lock()
		l.reqs = append(l.reqs, req.Method+" "+req.URL.RequestURI()+
			" (Accept: "+req.Header.Get("Accept")+"; answered: "+answer+")")
		if l.answered == "" && err == nil {
			l.answered = strings.TrimSpace(strings.Split(answer, ";")[0])
		}
		l.mu.Unlock()
		return resp, err
	})
}

// wire: "protobuf" or "json", by the first answer's media type.
func (l *requestLog) wire() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.answered {
	case "application/vnd.kubernetes.protobuf":
		return "protobuf"
	case "application/json":
		return "json"
	}
	return l.answered
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.reqs, "; ")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func syncCmd(args []string) error {
	fs := flag.NewFlagSet("sync", flag.ExitOnError)
	namespace := fs.String("namespace", "", "namespace whose ConfigMaps are synced")
	streaming := fs.Bool("streaming", false, "WatchListClient on (the initial list as a watch with sendInitialEvents); off without it")
	transform := fs.Bool("transform", false, "drop metadata.managedFields in a transform")
	asJSON := fs.Bool("json", false, "rest.Config.ContentType = application/json: JSON instead of the typed clients' default, protobuf")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *namespace == "" {
		return errors.New("--namespace is required")
	}
	// client-go reads KUBE_FEATURE_<name> once, on the first feature check (none
	// has happened yet: nothing of client-go has run).
	want := strconv.FormatBool(*streaming)
	if v, ok := os.LookupEnv("KUBE_FEATURE_WatchListClient"); ok {
		if b, err := strconv.ParseBool(v); err != nil || b != *streaming {
			return fmt.Errorf("KUBE_FEATURE_WatchListClient=%s contradicts --streaming=%v", v, *streaming)
		}
	}
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", want); err != nil {
		return err
	}
	if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != *streaming {
		return fmt.Errorf("WatchListClient is %v, wanted %v", got, *streaming)
	}

	cfg, err := restConfig()
	if err != nil {
		return err
	}
	if *asJSON {
		// Set: UseProtobufAsDefaultIfPreferred leaves the request alone (rest/request.go).
		cfg.ContentType = "application/json"
	}
	var log requestLog
	cfg.Wrap(log.wrap)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	impl := "client-go"
	opts := []informers.SharedInformerOption{informers.WithNamespace(*namespace)}
	switch {
	case *streaming && *transform:
		impl = "client-go-streaming-transform"
	case *streaming:
		impl = "client-go-streaming"
	case *transform:
		impl = "client-go-transform"
	}
	if *asJSON {
		impl += "-json"
	}
	if *transform {
		opts = append(opts, informers.WithTransform(stripManagedFields))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	informer := factory.Core().V1().ConfigMaps().Informer() // with the namespace index, as ours
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	started := time.Now()
	factory.Start(ctx.Done())
	// Woken, not polled, in 1.37 (cache.WaitFor on HasSyncedChecker().Done()).
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%v not synced", typ)
		}
	}
	synced := time.Now()
	objects := len(informer.GetIndexer().ListKeys())
	report(impl, log.wire(), synced.Sub(started), synced.Sub(processStart), objects)
	cancel()
	factory.Shutdown()
	fmt.Fprintf(os.Stderr, "%s: WatchListClient=%v; requests: %s\n", impl, *streaming, log.String())
	if objects == 0 {
		return fmt.Errorf("synced zero objects in namespace %s", *namespace)
	}
	return nil
}

// stripManagedFields is the transform a client-go user writes (client-go has no
// ready-made one; controller-runtime's cache.TransformStripManagedFields does this).
func stripManagedFields(obj interface{}) (interface{}, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// report prints the JSON line the Rust side prints: CPU time at synced, memory 1 s
// later (peak: VmHWM; after sync: VmRSS).
func report(impl, wire string, elapsed, processToSynced time.Duration, objects int) {
	cpu := cpuMs()
	time.Sleep(time.Second)
	hwm, rss := memKB()
	line, _ := json.Marshal(struct {
		Impl              string  `json:"impl"`
		Wire              string  `json:"wire"`
		Count             int     `json:"count"`
		Objects           int     `json:"objects"`
		SyncMs            float64 `json:"sync_ms"`
		ProcessToSyncedMs float64 `json:"process_to_synced_ms"`
		CPUMs             float64 `json:"cpu_ms"`
		PeakRSSKB         uint64  `json:"peak_rss_kb"`
		RSSKB             uint64  `json:"rss_kb"`
	}{impl, wire, objects, objects, roundMs(elapsed), roundMs(processToSynced), cpu, hwm, rss})
	fmt.Println(string(line))
}

func roundMs(d time.Duration) float64 {
	return float64(d.Microseconds()/100) / 10
}

// cpuMs: user + system CPU time of this process so far (all threads), in ms with
// µs precision, from CLOCK_PROCESS_CPUTIME_ID, as the Rust side reads it.
func cpuMs() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return math.Round(float64(ts.Nano())/1e5) / 10
}

// memKB: (VmHWM, VmRSS) in KiB from /proc/self/status.
func memKB() (uint64, uint64) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	field := func(name string) uint64 {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, name); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				return n
			}
		}
		return 0
	}
	return field("VmHWM:"), field("VmRSS:")
}

// storageCounters: the API server's LIST counters for ConfigMaps, by storage, and
// its ListFromCacheSnapshot feature gate (1 on, 0 off, -1 not reported).
type storageCounters struct {
	etcdLists, etcdObjects, cacheLists, cacheObjects uint64
	snapshotGate                                     int
}

func serverStateCmd(args []string) error {
	fs := flag.NewFlagSet("server-state", flag.ExitOnError)
	marker := fs.String("marker", "", "NAMESPACE/NAME of a ConfigMap to create or update first")
	probe := fs.String("probe", "", "namespace to list in two pages of one object; prints who served the second")
	version := fs.Bool("version", false, "print the API server's version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := restConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if *version {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			return err
		}
		fmt.Println(v.GitVersion)
		return nil
	}
	if *marker != "" {
		ns, name, ok := strings.Cut(*marker, "/")
		if !ok {
			return fmt.Errorf("--marker %q: want NAMESPACE/NAME", *marker)
		}
		if err := touch(ctx, client, ns, name); err != nil {
			return err
		}
	}
	before, err := readCounters(ctx, client)
	if err != nil {
		return err
	}
	if *probe == "" {
		fmt.Println(before.etcdLists, before.etcdObjects, before.cacheLists, before.cacheObjects, before.snapshotGate)
		return nil
	}
	// A most-recent list (resourceVersion unset), as kube-runtime and ours list: the
	// first page comes from the watch cache; the continuation carries the list's
	// resourceVersion and is served from a watch-cache snapshot if one exists.
	api := client.CoreV1().ConfigMaps(*probe)
	first, err := api.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if first.Continue == "" {
		return fmt.Errorf("probe: namespace %s has fewer than 2 ConfigMaps", *probe)
	}
	mid, err := readCounters(ctx, client)
	if err != nil {
		return err
	}
	if _, err := api.List(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue}); err != nil {
		return err
	}
	after, err := readCounters(ctx, client)
	if err != nil {
		return err
	}
	switch {
	case after.etcdLists > mid.etcdLists:
		fmt.Println("etcd")
	case after.cacheLists > mid.cacheLists:
		fmt.Println("watchcache")
	default:
		fmt.Println("unknown")
	}
	return nil
}

// touch creates the ConfigMap (and its namespace) or updates its data.
func touch(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	data := map[string]string{"touched": time.Now().UTC().Format(time.RFC3339Nano)}
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
	case err == nil:
		cm.Data = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", ns, name, err)
	}
	return nil
}

func readCounters(ctx context.Context, client kubernetes.Interface) (storageCounters, error) {
	c := storageCounters{snapshotGate: -1}
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return c, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if ok && name == "kubernetes_feature_enabled" && strings.Contains(rest, `name="ListFromCacheSnapshot"`) {
			if _, v, ok := strings.Cut(rest, "} "); ok {
				if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					c.snapshotGate = int(n)
				}
			}
			continue
		}
		if !ok || (name != "apiserver_storage_list_total" && name != "apiserver_storage_list_returned_objects_total") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(labels, `resource="configmaps"`) || !strings.Contains(labels, `group=""`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		n := uint64(v)
		etcd := strings.Contains(labels, `storage="etcd"`)
		cacheStorage := strings.Contains(labels, `storage="watchcache"`)
		switch {
		case name == "apiserver_storage_list_total" && etcd:
			c.etcdLists += n
		case name == "apiserver_storage_list_total" && cacheStorage:
			c.cacheLists += n
		case etcd:
			c.etcdObjects += n
		case cacheStorage:
			c.cacheObjects += n
		}
	}
	return c, nil
}
