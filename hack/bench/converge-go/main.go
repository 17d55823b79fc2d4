// converge-bench: the harness of hack/bench/converge.sh, which compares our Foo
// controller (cmd/sample-controller) with kubernetes/sample-controller on a real
// control plane. Run it through the script (its header says what is measured); the
// subcommands are:
//
//	converge-bench setup --namespace NS --count N
//	    Create the namespace and Foos foo-00000 .. foo-<N-1> (spec.deploymentName =
//	    the Foo's name, spec.replicas = 1); existing Foos are kept.
//	converge-bench reset --namespace NS
//	    Bring NS back to the starting state: no Deployments (nor ReplicaSets/Pods,
//	    when a kube-controller-manager runs), no Events, and no Foo with a .status.
//	converge-bench run --namespace NS --count N --impl NAME [flags] -- CMD ARGS...
//	    Watch Foos and Deployments in NS, then start CMD (a controller, or
//	    `converge-bench bare`) and time it until NS has converged (below); keep it
//	    running for --idle after a --idle-delay, then SIGTERM it. One JSON line on
//	    stdout.
//	converge-bench bare --namespace NS --concurrency C
//	    The API server's limit: the writes a controller makes, without informers:
//	    LIST the Foos, then for each Foo create its Deployment and write its status
//	    (PUT .../status, availableReplicas from the created Deployment), C Foos at a
//	    time (C = 0: all at once, one goroutine per Foo). One JSON line on stdout.
//	converge-bench starve --namespace NS --count N --readyz URL [flags] -- CMD ARGS...
//	    hack/bench/starvation.sh's harness (starvation.go): start CMD, create one
//	    more Foo as soon as CMD is ready, time its Deployment and the catch-up.
//
// Converged: every one of the N Foos has (1) a Deployment named
// spec.deploymentName in its namespace whose controller owner reference has the
// Foo's UID, and (2) a .status with availableReplicas (both controllers write
// the status after creating the Deployment). The harness sees this through its own
// watches, so the time includes the watch delay of the last event (milliseconds).
//
// Every client here is unthrottled (QPS -1): the harness must never be the
// bottleneck. The kubeconfig comes from --kubeconfig or $KUBECONFIG.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var fooGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

// fieldManager is the one both controllers write with.
const fieldManager = "sample-controller"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: converge-bench setup|reset|run|bare|starve [flags]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "setup":
		err = setup(args)
	case "reset":
		err = reset(args)
	case "run":
		err = run(args)
	case "bare":
		err = bare(args)
	case "starve":
		err = starve(args)
	default:
		err = fmt.Errorf("unknown subcommand %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "converge-bench %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

type clients struct {
	kube *kubernetes.Clientset
	dyn  *dynamic.DynamicClient
}

func newClients(kubeconfig string) (*clients, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling
	cfg.UserAgent = "converge-bench"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, dyn: dyn}, nil
}

// parallel runs f(i) for i in [0, n) on `workers` goroutines (all at once when
// workers <= 0) and returns the number of errors and the first one.
func parallel(n, workers int, f func(i int) error) (int, error) {
	if workers <= 0 || workers > n {
		workers = n
	}
	var next, failed atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					failed.Add(1)
					once.Do(func() { first = err })
				}
			}
		}()
	}
	wg.Wait()
	return int(failed.Load()), first
}

// ------------------------------------------------------------------- setup --

func setup(args []string) error {
	fs := flag.NewFlagSet("setup", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "converge-bench", "namespace of the Foos")
	count := fs.Int("count", 500, "Foos wanted")
	conc := fs.Int("concurrency", 32, "creates in flight")
	_ = fs.Parse(args)
	c, err := newClients(*kubeconfig)
	if err != nil {
		return err
	}
	ctx := context.Background()
	_, err = c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: *ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := map[string]bool{}
	list, err := c.dyn.Resource(fooGVR).Namespace(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, f := range list.Items {
		existing[f.GetName()] = true
	}
	var missing []string
	for i := 0; i < *count; i++ {
		if name := fooName(i); !existing[name] {
			missing = append(missing, name)
		}
	}
	start := time.Now()
	failed, first := parallel(len(missing), *conc, func(i int) error {
		foo := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "samplecontroller.k8s.io/v1alpha1",
			"kind":       "Foo",
			"metadata":   map[string]interface{}{"name": missing[i], "namespace": *ns},
			"spec":       map[string]interface{}{"deploymentName": missing[i], "replicas": int64(1)},
		}}
		_, err := c.dyn.Resource(fooGVR).Namespace(*ns).Create(ctx, foo, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if failed > 0 {
		return fmt.Errorf("%d creates failed, first: %v", failed, first)
	}
	total := len(list.Items) + len(missing)
	fmt.Printf("{\"namespace\":%q,\"foos\":%d,\"created\":%d,\"ms\":%d}\n", *ns, total, len(missing), time.Since(start).Milliseconds())
	if total != *count {
		return fmt.Errorf("namespace %s has %d Foos, wanted %d (more than asked: delete the namespace or use another)", *ns, total, *count)
	}
	return nil
}

func fooName(i int) string { return fmt.Sprintf("foo-%05d", i) }

// ------------------------------------------------------------------- reset --

func reset(args []string) error {
	fs := flag.NewFlagSet("reset", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "converge-bench", "namespace of the Foos")
	conc := fs.Int("concurrency", 32, "status resets in flight")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	_ = fs.Parse(args)
	c, err := newClients(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	if err := c.kube.AppsV1().Deployments(*ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting Deployments: %w", err)
	}
	if err := c.kube.CoreV1().Events(*ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting Events: %w", err)
	}
	foos, err := c.dyn.Resource(fooGVR).Namespace(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var withStatus []string
	for _, f := range foos.Items {
		if _, ok := f.Object["status"]; ok {
			withStatus = append(withStatus, f.GetName())
		}
	}
	// A JSON merge patch of the status subresource with status: null removes it (the
	// CRD's status is nullable, and only the status is written through /status).
	failed, first := parallel(len(withStatus), *conc, func(i int) error {
		_, err := c.dyn.Resource(fooGVR).Namespace(*ns).Patch(ctx, withStatus[i], types.MergePatchType,
			[]byte(`{"status":null}`), metav1.PatchOptions{}, "status")
		return err
	})
	if failed > 0 {
		return fmt.Errorf("%d status resets failed, first: %v", failed, first)
	}
	// Wait for a clean namespace: no Deployment, and (with a kube-controller-manager,
	// whose garbage collector deletes them in the background) no ReplicaSet or Pod.
	for {
		d, err1 := c.kube.AppsV1().Deployments(*ns).List(ctx, metav1.ListOptions{Limit: 1})
		r, err2 := c.kube.AppsV1().ReplicaSets(*ns).List(ctx, metav1.ListOptions{Limit: 1})
		p, err3 := c.kube.CoreV1().Pods(*ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		if len(d.Items)+len(r.Items)+len(p.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not clean after %v: %d+ Deployments, %d+ ReplicaSets, %d+ Pods left",
				*ns, *timeout, len(d.Items), len(r.Items), len(p.Items))
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Printf("{\"namespace\":%q,\"foos\":%d,\"status_reset\":%d,\"ms\":%d}\n", *ns, len(foos.Items), len(withStatus), time.Since(start).Milliseconds())
	return nil
}

// --------------------------------------------------------------------- run --

// tracker follows the Foos and Deployments of a namespace and counts the Foos that
// have converged (see the package docs).
type tracker struct {
	mu          sync.Mutex
	foos        map[string]fooState // by Foo name
	deployments map[string]string   // Deployment name -> UID of its controller owner
	byDeploy    map[string]string   // Deployment name -> name of the Foo naming it
	ok          map[string]bool     // converged Foos
	want        int
	start       time.Time
	firstDeploy time.Duration // first Deployment seen after start
	firstStatus time.Duration // first Foo status seen after start
	converged   chan struct{}
	convergedAt time.Duration
	counting    bool // after start: events count
	events      atomic.Int64
}

type fooState struct {
	uid        string
	deployName string
	hasStatus  bool
}

func newTracker(want int) *tracker {
	return &tracker{
		foos:        map[string]fooState{},
		deployments: map[string]string{},
		byDeploy:    map[string]string{},
		ok:          map[string]bool{},
		want:        want,
		converged:   make(chan struct{}),
		firstDeploy: -1,
		firstStatus: -1,
	}
}

// check re-evaluates Foo `name`; called with mu held.
func (t *tracker) check(name string) {
	f, exists := t.foos[name]
	good := exists && f.hasStatus && f.deployName != "" && t.deployments[f.deployName] == f.uid && f.uid != ""
	if good {
		t.ok[name] = true
	} else {
		delete(t.ok, name)
	}
	if t.counting && len(t.ok) == t.want && t.convergedAt == 0 {
		t.convergedAt = time.Since(t.start)
		close(t.converged)
	}
}

func (t *tracker) fooEvent(obj interface{}, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			u, ok = tomb.Obj.(*unstructured.Unstructured)
		}
		if !ok {
			return
		}
	}
	name := u.GetName()
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted {
		delete(t.foos, name)
	} else {
		_, hasStatus, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "availableReplicas")
		deployName, _, _ := unstructured.NestedString(u.Object, "spec", "deploymentName")
		t.foos[name] = fooState{uid: string(u.GetUID()), deployName: deployName, hasStatus: hasStatus}
		t.byDeploy[deployName] = name
		if hasStatus && t.counting && t.firstStatus < 0 {
			t.firstStatus = time.Since(t.start)
		}
	}
	t.check(name)
}

func (t *tracker) deploymentEvent(obj interface{}, deleted bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			d, ok = tomb.Obj.(*appsv1.Deployment)
		}
		if !ok {
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted {
		delete(t.deployments, d.Name)
	} else {
		owner := ""
		if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == "Foo" {
			owner = string(ref.UID)
		}
		t.deployments[d.Name] = owner
		if t.counting && t.firstDeploy < 0 {
			t.firstDeploy = time.Since(t.start)
		}
	}
	if foo, ok := t.byDeploy[d.Name]; ok {
		t.check(foo)
	}
}

func (t *tracker) counts() (foos, withStatus, deployments, converged int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.foos {
		if f.hasStatus {
			withStatus++
		}
	}
	return len(t.foos), withStatus, len(t.deployments), len(t.ok)
}

// procCPU is the user + system CPU time of pid so far, in ms (-1 if unreadable).
func procCPU(pid int) int64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	// The command name may contain spaces: fields start after the last ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of the whole line
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return (utime + stime) * 1000 / clkTck
}

// clkTck is USER_HZ, 100 on every Linux this runs on (getconf CLK_TCK).
const clkTck = 100

// procStatusKB reads a "VmHWM:"-style field of /proc/pid/status, in kB (-1 if none).
func procStatusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, field+":") {
			v, _ := strconv.ParseInt(strings.Fields(line[len(field)+1:])[0], 10, 64)
			return v
		}
	}
	return -1
}

func procThreads(pid int) int64 { return procStatusKB(pid, "Threads") }

// procCtxSwitches sums the voluntary and involuntary context switches of pid's live
// threads so far (-1 if unreadable): a process that is woken once per response and
// per watch event switches that often, whatever its pace.
func procCtxSwitches(pid int) int64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return -1
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "voluntary_ctxt_switches:") || strings.HasPrefix(line, "nonvoluntary_ctxt_switches:") {
				v, _ := strconv.ParseInt(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), 10, 64)
				total += v
			}
		}
	}
	return total
}

// requestCounts reads kube-apiserver's apiserver_request_total from /metrics, summed
// by "VERB resource[/subresource]" for resource requests, with the status code appended
// when it is not 2xx (nil if not readable).
func requestCounts(ctx context.Context, c *clients) map[string]float64 {
	raw, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("apiserver_request_total{")) {
			continue
		}
		s := string(line)
		end := strings.LastIndexByte(s, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, kv := range splitLabels(s[len("apiserver_request_total{"):end]) {
			if i := strings.IndexByte(kv, '='); i > 0 {
				labels[kv[:i]] = strings.Trim(kv[i+1:], `"`)
			}
		}
		if labels["resource"] == "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s[end+1:]), 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if code := labels["code"]; code != "" && !strings.HasPrefix(code, "2") {
			key += " " + code // failures (409 Conflict, 404...) apart
		}
		out[key] += v
	}
	return out
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// delta is b - a for the request kinds of interest (others summed as "other").
func delta(a, b map[string]float64) map[string]int64 {
	if a == nil || b == nil {
		return nil
	}
	out := map[string]int64{}
	for k, v := range b {
		d := int64(v - a[k])
		if d == 0 || strings.HasPrefix(k, "WATCH") {
			continue
		}
		res := strings.Fields(k)[1]
		if strings.HasPrefix(res, "foos") || strings.HasPrefix(res, "deployments") || strings.HasPrefix(res, "events") {
			out[k] += d
		} else {
			out["other"] += d
		}
	}
	return out
}

type phaseCPU struct {
	child, apiserver, etcd int64
}

func readCPU(child, apiserver, etcd int) phaseCPU {
	return phaseCPU{procCPU(child), procCPU(apiserver), procCPU(etcd)}
}

func sub(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return a - b
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "converge-bench", "namespace of the Foos")
	count := fs.Int("count", 500, "Foos expected in the namespace")
	impl := fs.String("impl", "", "name of the implementation (for the output)")
	idleDelay := fs.Duration("idle-delay", 5*time.Second, "wait after convergence before the idle window")
	idle := fs.Duration("idle", 60*time.Second, "idle window after convergence (0: stop at convergence)")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up converging after")
	apiserverPID := fs.Int("apiserver-pid", 0, "kube-apiserver's pid, for its CPU (0: not measured)")
	etcdPID := fs.Int("etcd-pid", 0, "etcd's pid, for its CPU (0: not measured)")
	logPath := fs.String("log", "", "file for the command's stdout and stderr (default: discarded)")
	_ = fs.Parse(args)
	command := fs.Args()
	if len(command) == 0 {
		return errors.New("no command after --")
	}
	c, err := newClients(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Our watches first, so the start is the command's start.
	t := newTracker(*count)
	var eventWrites atomic.Int64
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, *ns, nil)
	fooInf := dynFactory.ForResource(fooGVR).Informer()
	fooReg, _ := fooInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { t.fooEvent(o, false) },
		UpdateFunc: func(_, o interface{}) { t.fooEvent(o, false) },
		DeleteFunc: func(o interface{}) { t.fooEvent(o, true) },
	})
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithNamespace(*ns))
	depInf := kubeFactory.Apps().V1().Deployments().Informer()
	depReg, _ := depInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { t.deploymentEvent(o, false) },
		UpdateFunc: func(_, o interface{}) { t.deploymentEvent(o, false) },
		DeleteFunc: func(o interface{}) { t.deploymentEvent(o, true) },
	})
	// Events written (created or patched) in the namespace: both controllers record a
	// "Synced" Event per successful sync.
	evInf := kubeFactory.Core().V1().Events().Informer()
	evReg, _ := evInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { eventWrites.Add(1) },
		UpdateFunc: func(_, _ interface{}) { eventWrites.Add(1) },
	})
	dynFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	// The handlers' registrations, not the informers: an informer has synced when its
	// store has the list, its handlers only once they have been called for all of it
	// (counting before that saw 4,696 of 5,000 Foos).
	if !cache.WaitForCacheSync(ctx.Done(), fooReg.HasSynced, depReg.HasSynced, evReg.HasSynced) {
		return errors.New("harness informers did not sync")
	}
	if foos, withStatus, deps, _ := t.counts(); foos != *count || withStatus != 0 || deps != 0 {
		return fmt.Errorf("namespace %s is not in the starting state: %d Foos (want %d), %d with a status, %d Deployments (run reset)",
			*ns, foos, *count, withStatus, deps)
	}

	var out *os.File
	if *logPath != "" {
		if out, err = os.Create(*logPath); err != nil {
			return err
		}
		defer out.Close()
	}
	reqStart := requestCounts(ctx, c)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	t.mu.Lock()
	t.start = time.Now()
	t.counting = true
	t.mu.Unlock()
	cpu0 := readCPU(0, *apiserverPID, *etcdPID)
	ev0 := eventWrites.Load()
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	alive := func() bool {
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}

	res := map[string]interface{}{"impl": *impl, "count": *count, "command": strings.Join(command, " ")}
	// childCPU: from /proc while it runs, from rusage once it has exited.
	childCPU := func() int64 {
		if alive() {
			if v := procCPU(pid); v >= 0 {
				return v
			}
		}
		<-exited
		return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Milliseconds()
	}
	converged := false
	select {
	case <-t.converged:
		converged = true
	case <-exited:
		// A bare client exits after its last write; give our watches a moment to see it.
		select {
		case <-t.converged:
			converged = true
		case <-time.After(10 * time.Second):
		}
	case <-time.After(*timeout):
	}
	wall := time.Since(t.start)
	convCPU := childCPU()
	cpu1 := readCPU(0, *apiserverPID, *etcdPID)
	ev1 := eventWrites.Load()
	reqConv := requestCounts(ctx, c)
	foos, withStatus, deps, ok := t.counts()
	t.mu.Lock()
	res["converged"] = converged
	if converged {
		res["converge_ms"] = t.convergedAt.Milliseconds()
	} else {
		res["converge_ms"] = nil
		res["gave_up_after_ms"] = wall.Milliseconds()
	}
	res["first_deployment_ms"] = msOrNil(t.firstDeploy)
	res["first_status_ms"] = msOrNil(t.firstStatus)
	t.mu.Unlock()
	res["state_at_end_of_converge"] = map[string]int{"foos": foos, "with_status": withStatus, "deployments": deps, "converged": ok}
	res["cpu_ms"] = convCPU
	res["apiserver_cpu_ms"] = sub(cpu1.apiserver, cpu0.apiserver)
	res["etcd_cpu_ms"] = sub(cpu1.etcd, cpu0.etcd)
	res["event_writes"] = ev1 - ev0
	res["requests"] = delta(reqStart, reqConv)
	if alive() {
		res["rss_kb_at_converge"] = procStatusKB(pid, "VmRSS")
		res["threads"] = procThreads(pid)
		res["ctx_switches"] = procCtxSwitches(pid)
	}

	if alive() && converged && *idle > 0 {
		time.Sleep(*idleDelay)
		res["tail_cpu_ms"] = sub(procCPU(pid), convCPU)
		i0 := readCPU(pid, *apiserverPID, *etcdPID)
		e0 := eventWrites.Load()
		r0 := requestCounts(ctx, c)
		time.Sleep(*idle)
		i1 := readCPU(pid, *apiserverPID, *etcdPID)
		res["idle_s"] = idle.Seconds()
		res["idle_cpu_ms"] = sub(i1.child, i0.child)
		res["idle_apiserver_cpu_ms"] = sub(i1.apiserver, i0.apiserver)
		res["idle_etcd_cpu_ms"] = sub(i1.etcd, i0.etcd)
		res["idle_event_writes"] = eventWrites.Load() - e0
		res["idle_requests"] = delta(r0, requestCounts(ctx, c))
		if _, _, _, still := t.counts(); still != *count {
			res["diverged_while_idle"] = *count - still
		}
	}
	if alive() {
		res["peak_rss_kb"] = procStatusKB(pid, "VmHWM")
		res["rss_kb"] = procStatusKB(pid, "VmRSS")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			res["killed"] = true
		}
		res["total_cpu_ms"] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Milliseconds()
	} else {
		<-exited
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res["peak_rss_kb"] = ru.Maxrss // kB on Linux
		}
		res["exit_error"] = errString(waitErr)
		if out != nil {
			res["child"] = lastJSONLine(*logPath)
		}
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	if !converged {
		return fmt.Errorf("%s did not converge (%d of %d Foos); log: %s", *impl, ok, *count, *logPath)
	}
	return nil
}

func msOrNil(d time.Duration) interface{} {
	if d < 0 {
		return nil
	}
	return d.Milliseconds()
}

func errString(err error) interface{} {
	if err == nil {
		return nil
	}
	return err.Error()
}

// lastJSONLine returns the last line of the file that parses as a JSON object.
func lastJSONLine(path string) interface{} {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var v map[string]interface{}
		if json.Unmarshal([]byte(lines[i]), &v) == nil {
			return v
		}
	}
	return nil
}

// -------------------------------------------------------------------- bare --

// newDeployment is sample-controller's newDeployment (the same object both
// controllers create, give or take the image tag).
func newDeployment(foo *unstructured.Unstructured) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": foo.GetName()}
	deployName, _, _ := unstructured.NestedString(foo.Object, "spec", "deploymentName")
	replicas, _, _ := unstructured.NestedInt64(foo.Object, "spec", "replicas")
	r := int32(replicas)
	isController, block := true, true
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      deployName,
			Namespace: foo.GetNamespace(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "samplecontroller.k8s.io/v1alpha1", Kind: "Foo", Name: foo.GetName(), UID: foo.GetUID(),
				Controller: &isController, BlockOwnerDeletion: &block,
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}

func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "converge-bench", "namespace of the Foos")
	conc := fs.Int("concurrency", 2, "Foos in flight (0: all at once)")
	_ = fs.Parse(args)
	c, err := newClients(*kubeconfig)
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	list, err := c.dyn.Resource(fooGVR).Namespace(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	listed := time.Now()
	foos := c.dyn.Resource(fooGVR).Namespace(*ns)
	failed, first := parallel(len(list.Items), *conc, func(i int) error {
		foo := &list.Items[i]
		d, err := c.kube.AppsV1().Deployments(*ns).Create(ctx, newDeployment(foo), metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return err
		}
		updated := foo.DeepCopy()
		if err := unstructured.SetNestedField(updated.Object, int64(d.Status.AvailableReplicas), "status", "availableReplicas"); err != nil {
			return err
		}
		_, err = foos.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	end := time.Now()
	fmt.Printf("{\"bare\":true,\"concurrency\":%d,\"foos\":%d,\"list_ms\":%d,\"write_ms\":%d,\"writes\":%d,\"errors\":%d}\n",
		*conc, len(list.Items), listed.Sub(start).Milliseconds(), end.Sub(listed).Milliseconds(), 2*len(list.Items), failed)
	if failed > 0 {
		return fmt.Errorf("%d Foos failed, first: %v", failed, first)
	}
	return nil
}
