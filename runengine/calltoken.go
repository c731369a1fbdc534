package runengine

import "strconv"

// callToken names one call of a run: kind (what the step calls it:
// "call", "remind", "check", "gate") and the worker's count of calls made.
// The run's entry awaits the token of its call in flight (entry.inflight)
// and takes only the result that carries it, so a result of any earlier
// call is stale and refused: the call the run made again after it was
// reloaded, an earlier attempt, or a call of a step that has since ended.
// The token lives in memory only; a run read from the store awaits no
// call until it makes one. Making it costs one allocation.
func (w *worker) callToken(kind string) string {
	w.calls++
	var b [32]byte
	return string(strconv.AppendUint(append(append(b[:0], kind...), '#'), w.calls, 10))
}
