package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"

	"github.com/bas-platform/bas"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsMux serves reg at /metrics.
func metricsMux(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// parsePrefixes reads a comma-separated list of address ranges; a bare
// address is a range of one.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if a, err := netip.ParseAddr(part); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("-webhook-allow: %q is not an address range such as 127.0.0.0/8", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// providersLine sums up the providers in one line: how many of each kind,
// and how many declared connectors are still coming (plugins that failed
// to load are logged as errors).
func providersLine(ws *bas.Workspace) string {
	kinds := map[string]int{}
	coming := 0
	for _, info := range ws.Capabilities().Infos() {
		if info.Coming {
			coming++
			continue
		}
		kinds[string(info.Kind)]++
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	total := 0
	for i, k := range names {
		parts[i] = fmt.Sprintf("%d %s", kinds[k], k)
		total += kinds[k]
	}
	line := fmt.Sprintf("%d providers (%s)", total, strings.Join(parts, ", "))
	if coming > 0 {
		line += fmt.Sprintf(", %d connectors coming", coming)
	}
	return line
}
