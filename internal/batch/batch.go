// Package batch runs the work of concurrent callers together: the caller
// that finds nothing running leads, runs everything queued so far in one
// go (one transaction, one sync of the disk), and hands the lead to the
// first caller that queued meanwhile. No goroutine of its own, no timer:
// a lone caller runs at once, and under load the batches grow by
// themselves.
package batch

import "sync"

// Leader batches values of T. The zero Leader is ready to use; it must not
// be copied after first use.
type Leader[T any] struct {
	mu    sync.Mutex
	queue []*waiter[T]
	busy  bool
}

type waiter[T any] struct {
	v    T
	done chan struct{} // closed when v's batch ran, or when it is to lead
	lead bool
}

// Do queues v and returns once a batch holding v has run: run is called,
// by one of the callers, with every value queued since the last batch
// began, v among them, in the order they came. run answers each value
// through the value itself (T is usually a pointer to a request that holds
// its answer); Do calls run from one caller at a time.
func (l *Leader[T]) Do(v T, run func(batch []T)) {
	w := &waiter[T]{v: v, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, w)
	if l.busy {
		l.mu.Unlock()
		<-w.done
		if !w.lead {
			return
		}
		l.mu.Lock()
	}
	l.busy = true
	ws := l.queue
	l.queue = nil
	l.mu.Unlock()
	vs := make([]T, len(ws))
	for i, x := range ws {
		vs[i] = x.v
	}
	run(vs)
	for _, x := range ws {
		if x != w {
			close(x.done)
		}
	}
	l.mu.Lock()
	if len(l.queue) > 0 {
		next := l.queue[0]
		next.lead = true
		close(next.done)
	} else {
		l.busy = false
	}
	l.mu.Unlock()
}
