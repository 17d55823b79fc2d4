// Package workqueuebench benchmarks client-go's real util/workqueue on the same
// scenarios as crates/runtime/workqueue/benches/workqueue.rs, so the two can be compared
// run for run (hack/bench/workqueue.sh runs both back to back).
//
// Keys are strings "ns-<i%100>/name-<i>" built before the timer starts, exactly the
// keys the Rust benchmark uses. Every benchmark reports its throughput as the custom
// metric "elems/s", with the same element as its Rust twin:
//
//   - SingleWorker:            one Add + Get + Done cycle on a distinct key.
//   - SingleWorkerRateLimited: one Add + Get + Forget + Done cycle (rate-limiting queue).
//   - DedupHeavy:              one Add; each key is added 10 times before Get + Done.
//   - TwoProducersTwoWorkers:  one added key that a worker got and marked done.
//   - AddAfterNew100kPending:  one AddAfter of a new key with 100k-150k keys waiting.
//   - AddAfterReadd100kPending: one AddAfter of an already-waiting key (100k waiting).
//
// Run with -cpu 2 (GOMAXPROCS=2) to match the Rust multi-thread runtime's 2 workers.
package workqueuebench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

const (
	numKeys      = 10_000
	dedupBatch   = 1_000
	dedupRepeats = 10
	pending      = 100_000
	addAfterRun  = 50_000
	yieldEvery   = 64
)

func makeKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns-%d/%s-%d", i%100, prefix, i)
	}
	return keys
}

// delays spreads n delays over [1h, 2h) deterministically (the Rust bench uses the
// same formula), so new items land all over the waiting heap, never at its head.
func delays(n int, mult int) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Hour + time.Duration((i*mult)%3_600_000)*time.Millisecond
	}
	return ds
}

func report(b *testing.B, elems int) {
	b.ReportMetric(float64(elems)/b.Elapsed().Seconds(), "elems/s")
}

func BenchmarkSingleWorker(b *testing.B) {
	keys := makeKeys("name", numKeys)
	q := workqueue.NewTyped[string]()
	defer q.ShutDown()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q.Add(keys[i%numKeys])
		item, _ := q.Get()
		q.Done(item)
	}
	b.StopTimer()
	report(b, b.N)
}

func BenchmarkSingleWorkerRateLimited(b *testing.B) {
	keys := makeKeys("name", numKeys)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q.Add(keys[i%numKeys])
		item, _ := q.Get()
		q.Forget(item)
		q.Done(item)
	}
	b.StopTimer()
	report(b, b.N)
}

// One op = a batch of 1,000 keys, each added 10 times (10 rounds over the batch),
// then drained with Get + Done. Elements = adds (10,000 per op).
func BenchmarkDedupHeavy(b *testing.B) {
	keys := makeKeys("name", dedupBatch)
	q := workqueue.NewTyped[string]()
	defer q.ShutDown()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < dedupRepeats; r++ {
			for _, k := range keys {
				q.Add(k)
			}
		}
		for range keys {
			item, _ := q.Get()
			q.Done(item)
		}
	}
	b.StopTimer()
	report(b, b.N*dedupBatch*dedupRepeats)
}

// b.N distinct keys, half added by each of 2 producers (yielding every 64 adds, as
// the Rust producer tasks do), got and done by 2 workers; timed until the queue is
// shut down and both workers have drained it.
func BenchmarkTwoProducersTwoWorkers(b *testing.B) {
	keys := makeKeys("name", b.N)
	q := workqueue.NewTyped[string]()
	var workers, producers sync.WaitGroup
	processed := make([]int, 2)
	b.ResetTimer()
	for w := 0; w < 2; w++ {
		workers.Add(1)
		go func(w int) {
			defer workers.Done()
			n := 0 // a local counter: no false sharing between the workers
			for {
				item, shutdown := q.Get()
				if shutdown {
					processed[w] = n
					return
				}
				q.Done(item)
				n++
			}
		}(w)
	}
	half := len(keys) / 2
	for _, part := range [][]string{keys[:half], keys[half:]} {
		producers.Add(1)
		go func(part []string) {
			defer producers.Done()
			for j, k := range part {
				q.Add(k)
				if j%yieldEvery == yieldEvery-1 {
					runtime.Gosched()
				}
			}
		}(part)
	}
	producers.Wait()
	q.ShutDown()
	workers.Wait()
	b.StopTimer()
	if got := processed[0] + processed[1]; got != b.N {
		b.Fatalf("processed %d of %d keys", got, b.N)
	}
	report(b, b.N)
}

// waitLoopIdle returns once the delaying queue's loop has taken every AddAfter sent
// so far off its channel: a 1ns AddAfter goes through the same FIFO channel and is
// added to the queue as soon as the loop reads it.
func waitLoopIdle(q workqueue.TypedDelayingInterface[string]) {
	q.AddAfter("sentinel", time.Nanosecond)
	item, _ := q.Get()
	q.Done(item)
}

// AddAfter of new keys into a delaying queue with 100k keys already waiting. Each
// run of 50k AddAfters gets a fresh queue pre-filled (untimed) with 100k keys, so
// 100k-150k keys are waiting throughout. The timer includes the loop goroutine
// inserting the last buffered entries into its heap.
func BenchmarkAddAfterNew100kPending(b *testing.B) {
	pendingKeys := makeKeys("pending", pending)
	pendingDelays := delays(pending, 7919)
	newKeys := makeKeys("name", addAfterRun)
	newDelays := delays(addAfterRun, 104729)
	b.ResetTimer()
	for left := b.N; left > 0; left -= addAfterRun {
		b.StopTimer()
		q := workqueue.NewTypedDelayingQueue[string]()
		for i, k := range pendingKeys {
			q.AddAfter(k, pendingDelays[i])
		}
		waitLoopIdle(q)
		chunk := min(left, addAfterRun)
		b.StartTimer()
		for j := 0; j < chunk; j++ {
			q.AddAfter(newKeys[j], newDelays[j])
		}
		waitLoopIdle(q)
		b.StopTimer()
		q.ShutDown()
	}
	report(b, b.N)
}

// AddAfter of a key that is already waiting, with a later ready time (a no-op that
// keeps the earlier time), 100k keys waiting.
func BenchmarkAddAfterReadd100kPending(b *testing.B) {
	pendingKeys := makeKeys("pending", pending)
	pendingDelays := delays(pending, 7919)
	q := workqueue.NewTypedDelayingQueue[string]()
	defer q.ShutDown()
	for i, k := range pendingKeys {
		q.AddAfter(k, pendingDelays[i])
	}
	waitLoopIdle(q)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % pending
		q.AddAfter(pendingKeys[j], pendingDelays[j]+time.Hour)
	}
	waitLoopIdle(q)
	b.StopTimer()
	report(b, b.N)
}
