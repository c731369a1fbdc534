// Package bounded keeps the maps a package uses as caches within a bound.
package bounded

// MakeRoom drops an arbitrary entry of m when it holds max entries or more,
// so that one entry more leaves it within max (when it held at most max).
func MakeRoom[M ~map[K]V, K comparable, V any](m M, max int) {
	if len(m) < max {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}
