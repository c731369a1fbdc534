package main

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in   string
		want []netip.Prefix
		ok   bool
	}{
		{"", nil, true},
		{"127.0.0.0/8", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, true},
		{" 127.0.0.1 , 10.1.2.3/8,::1", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("::1/128")}, true},
		{"localhost", nil, false},
		{"10.0.0.0/33", nil, false},
	} {
		got, err := parsePrefixes(test.in)
		if (err == nil) != test.ok {
			t.Errorf("parsePrefixes(%q) error %v, want ok=%v", test.in, err, test.ok)
			continue
		}
		if diff := cmp.Diff(test.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
			t.Errorf("parsePrefixes(%q) (-want +got):\n%s", test.in, diff)
		}
	}
}
