package main

// converge-bench starve: the harness of hack/bench/starvation.sh (issue 15,
// "Starvation"). Its header says what is measured and why.
//
//	converge-bench starve --namespace NS --count N --readyz URL [flags] -- CMD ARGS...
//
// NS holds N Foos in the starting state of `converge-bench reset` (no Deployment, no
// status). The harness watches Foos and Deployments, starts CMD (a controller), polls
// URL (its /readyz, 200 once its informers have synced and its handlers have seen the
// initial lists) every 10 ms, and as soon as it answers 200 creates one more Foo,
// --new-foo (spec.deploymentName = its name): created after the controller's lists,
// it can only reach the controller through its watch. Then it waits until (1) that
// Foo's Deployment appears in its watch and (2) all N+1 Foos have converged (as
// `run`: a Deployment controlled by the Foo and a .status), SIGTERMs CMD and deletes
// the new Foo again (its Deployment is left to the next reset). One JSON line on
// stdout:
//
//	ready_ms                      CMD start -> /readyz 200
//	queue_depth_at_create         workqueue_depth of CMD's queues (from --metrics) just
//	                              before the create: the keys in line ahead of or
//	                              behind the new Foo; queue_depth_by_priority_at_create
//	                              the same by priority (workqueue_depth_with_priority)
//	new_foo_ms                    create request sent -> its Deployment in our watch
//	old_deployments_at_new        old Foos' Deployments that came before it in our
//	                              watch (a watch delivers in resourceVersion order, so
//	                              this is exact: what was created before it)
//	old_converged_at_new          old Foos with a Deployment AND a status at that moment
//	catch_up_ms                   CMD start -> all N+1 converged
//	catch_up_after_ready_ms       /readyz 200 -> all N+1 converged
//	cpu_ms, apiserver_cpu_ms, etcd_cpu_ms, requests: as `run`, CMD start -> converged
//	controller_counters           at convergence, from --metrics: syncs by result,
//	                              staleness-guard checks and wait, queue adds and retries
//	lists                         LISTs of foos and deployments the API server served
//	                              from etcd and from its watch cache over the run
//	                              (apiserver_storage_list_total, storage label)

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// newFooWatch records when the new Foo's Deployment appears, and how many other
// Foo-controlled Deployments were added before it.
type newFooWatch struct {
	mu        sync.Mutex
	name      string
	counting  bool
	older     int           // Foo-controlled Deployments added (after counting began) before it
	olderAtIt int           // older when it was added
	seenAt    time.Time     // when it was added
	seen      chan struct{} // closed when it was added
}

func (w *newFooWatch) deploymentAdded(obj interface{}) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.counting || !w.seenAt.IsZero() {
		return
	}
	if d.Name == w.name {
		w.seenAt = time.Now()
		w.olderAtIt = w.older
		close(w.seen)
		return
	}
	if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == "Foo" {
		w.older++
	}
}

// listCounts reads apiserver_storage_list_total for foos and deployments, by
// "resource storage" (nil if not readable).
func listCounts(ctx context.Context, c *clients) map[string]float64 {
	raw, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_storage_list_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range splitLabels(labels) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		if l["resource"] != "foos" && l["resource"] != "deployments" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		out[l["resource"]+" "+l["storage"]] += v
	}
	return out
}

// queueDepth reads a Prometheus text page at url: the sum of workqueue_depth, and
// workqueue_depth_with_priority by priority label (-1 and nil if unreadable).
func queueDepth(url string) (int64, map[string]int64) {
	if url == "" {
		return -1, nil
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return -1, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1, nil
	}
	var sum float64
	found := false
	byPriority := map[string]int64{}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "workqueue_depth{") || strings.HasPrefix(line, "workqueue_depth "):
			sum += v
			found = true
		case strings.HasPrefix(line, "workqueue_depth_with_priority{"):
			_, rest, _ := strings.Cut(line, "priority=\"")
			p, _, _ := strings.Cut(rest, "\"")
			byPriority[p] += int64(v)
		}
	}
	if !found {
		return -1, nil
	}
	return int64(sum), byPriority
}

// controllerCounters reads, from a Prometheus text page at url, the series of the
// sync loop's counters: syncs by result, staleness-guard checks by result and their
// total wait, queue adds (nil if unreadable). Keyed by the series as exposed.
func controllerCounters(url string) map[string]float64 {
	if url == "" {
		return nil
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range []string{"controller_runtime_reconcile_total{", "controller_freshness_checks_total{",
			"controller_freshness_wait_seconds_sum{", "workqueue_adds_total{", "workqueue_retries_total{"} {
			if !strings.HasPrefix(line, name) {
				continue
			}
			series, value, ok := strings.Cut(line, "} ")
			if !ok {
				continue
			}
			if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
				out[series+"}"] = v
			}
		}
	}
	return out
}

// deleteFoo deletes Foo `name` and the Deployment of the same name (both may be
// absent) and waits until both are gone.
func deleteFoo(ctx context.Context, c *clients, ns, name string) error {
	err1 := c.dyn.Resource(fooGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	err2 := c.kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
	for _, err := range []error{err1, err2} {
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for {
		_, err1 := c.dyn.Resource(fooGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		_, err2 := c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Foo or Deployment %s/%s still there: %w", ns, name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func starve(args []string) error {
	fs := flag.NewFlagSet("starve", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "starvation-bench", "namespace of the Foos")
	count := fs.Int("count", 5000, "Foos expected in the namespace (without the new one)")
	newName := fs.String("new-foo", "starve-new", "name of the Foo created once CMD is ready")
	impl := fs.String("impl", "", "name of the implementation (for the output)")
	readyz := fs.String("readyz", "", "CMD's readiness URL, e.g. http://127.0.0.1:18081/readyz")
	metricsURL := fs.String("metrics", "", "CMD's /metrics URL, for the queue depth (optional)")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up after")
	apiserverPID := fs.Int("apiserver-pid", 0, "kube-apiserver's pid, for its CPU (0: not measured)")
	etcdPID := fs.Int("etcd-pid", 0, "etcd's pid, for its CPU (0: not measured)")
	logPath := fs.String("log", "", "file for the command's stdout and stderr (default: discarded)")
	_ = fs.Parse(args)
	command := fs.Args()
	if len(command) == 0 {
		return errors.New("no command after --")
	}
	if *readyz == "" {
		return errors.New("--readyz is required")
	}
	c, err := newClients(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A leftover of an interrupted run would be in the controller's initial list.
	cleanCtx, cleanCancel := context.WithTimeout(ctx, time.Minute)
	err = deleteFoo(cleanCtx, c, *ns, *newName)
	cleanCancel()
	if err != nil {
		return fmt.Errorf("removing a leftover new Foo: %w", err)
	}

	t := newTracker(*count + 1)
	w := &newFooWatch{name: *newName, seen: make(chan struct{})}
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, *ns, nil)
	fooReg, _ := dynFactory.ForResource(fooGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { t.fooEvent(o, false) },
		UpdateFunc: func(_, o interface{}) { t.fooEvent(o, false) },
		DeleteFunc: func(o interface{}) { t.fooEvent(o, true) },
	})
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithNamespace(*ns))
	depReg, _ := kubeFactory.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o interface{}) {
			w.deploymentAdded(o)
			t.deploymentEvent(o, false)
		},
		UpdateFunc: func(_, o interface{}) { t.deploymentEvent(o, false) },
		DeleteFunc: func(o interface{}) { t.deploymentEvent(o, true) },
	})
	dynFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), fooReg.HasSynced, depReg.HasSynced) {
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
	lists0 := listCounts(ctx, c)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	w.mu.Lock()
	w.counting = true
	w.mu.Unlock()
	t.mu.Lock()
	t.start = time.Now()
	t.counting = true
	t.mu.Unlock()
	cpu0 := readCPU(0, *apiserverPID, *etcdPID)
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() bool {
		select {
		case <-exited:
			return false
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return false
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return true
		}
	}
	deadline := time.After(*timeout)
	res := map[string]interface{}{"impl": *impl, "count": *count, "command": strings.Join(command, " ")}
	fail := func(what string) error {
		res["failed"] = what
		res["killed"] = stop()
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		return fmt.Errorf("%s: %s; log: %s", *impl, what, *logPath)
	}

	// Ready: the controller's handlers have seen the initial lists.
	probe := http.Client{Timeout: time.Second}
	var readyAt time.Duration
	for {
		resp, err := probe.Get(*readyz)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				readyAt = time.Since(t.start)
				break
			}
		}
		select {
		case <-exited:
			return fail("exited before it was ready")
		case <-deadline:
			return fail("not ready in time")
		case <-time.After(10 * time.Millisecond):
		}
	}
	res["ready_ms"] = readyAt.Milliseconds()
	res["queue_depth_at_create"], res["queue_depth_by_priority_at_create"] = queueDepth(*metricsURL)
	foo := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "samplecontroller.k8s.io/v1alpha1",
		"kind":       "Foo",
		"metadata":   map[string]interface{}{"name": *newName, "namespace": *ns},
		"spec":       map[string]interface{}{"deploymentName": *newName, "replicas": int64(1)},
	}}
	createdAt := time.Now()
	if _, err := c.dyn.Resource(fooGVR).Namespace(*ns).Create(ctx, foo, metav1.CreateOptions{}); err != nil {
		res["create_error"] = err.Error()
		return fail("creating the new Foo failed")
	}
	res["create_ms"] = time.Since(createdAt).Milliseconds()

	select {
	case <-w.seen:
	case <-exited:
		return fail("exited before the new Foo's Deployment appeared")
	case <-deadline:
		return fail("the new Foo's Deployment did not appear in time")
	}
	w.mu.Lock()
	res["new_foo_ms"] = w.seenAt.Sub(createdAt).Milliseconds()
	res["new_foo_after_start_ms"] = w.seenAt.Sub(t.start).Milliseconds()
	res["old_deployments_at_new"] = w.olderAtIt
	w.mu.Unlock()
	t.mu.Lock()
	oldConverged := len(t.ok)
	if t.ok[*newName] {
		oldConverged--
	}
	t.mu.Unlock()
	res["old_converged_at_new"] = oldConverged

	select {
	case <-t.converged:
	case <-exited:
		return fail("exited before converging")
	case <-deadline:
		return fail("did not converge in time")
	}
	t.mu.Lock()
	catchUp := t.convergedAt
	t.mu.Unlock()
	res["catch_up_ms"] = catchUp.Milliseconds()
	res["catch_up_after_ready_ms"] = (catchUp - readyAt).Milliseconds()
	res["cpu_ms"] = procCPU(pid)
	cpu1 := readCPU(0, *apiserverPID, *etcdPID)
	res["apiserver_cpu_ms"] = sub(cpu1.apiserver, cpu0.apiserver)
	res["etcd_cpu_ms"] = sub(cpu1.etcd, cpu0.etcd)
	res["requests"] = delta(reqStart, requestCounts(ctx, c))
	if lists1 := listCounts(ctx, c); lists0 != nil && lists1 != nil {
		lists := map[string]int64{}
		for k, v := range lists1 {
			if d := int64(v - lists0[k]); d != 0 {
				lists[k] = d
			}
		}
		res["lists"] = lists
	}
	res["controller_counters"] = controllerCounters(*metricsURL)
	res["killed"] = stop()

	cleanCtx, cleanCancel = context.WithTimeout(ctx, time.Minute)
	defer cleanCancel()
	if err := c.dyn.Resource(fooGVR).Namespace(*ns).Delete(cleanCtx, *newName, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the new Foo: %w", err)
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}
