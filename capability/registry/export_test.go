package registry

// CachedTenants counts the tenants whose bindings r keeps in memory.
func CachedTenants(r *Registry) int {
	n := 0
	r.tenants.Range(func(any, any) bool { n++; return true })
	return n
}
