package bas_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	for _, test := range []struct {
		name string
		opts bas.Options
		want string // "" opens
	}{
		{"defaults", bas.Options{}, ""},
		{"workers 1024", bas.Options{Workers: 1024}, ""},
		{"workers 1025", bas.Options{Workers: 1025}, "bas: Options.Workers is 1025; use 1 to 1024, or 0 for 2 x GOMAXPROCS"},
		{"workers -1", bas.Options{Workers: -1}, "Options.Workers is -1"},
		{"max attempts 100", bas.Options{MaxAttempts: 100}, ""},
		{"max attempts 101", bas.Options{MaxAttempts: 101}, "Options.MaxAttempts is 101; use 1 to 100, or 0 for 5"},
		{"approval expiry 1m", bas.Options{ApprovalExpiry: time.Minute}, ""},
		{"approval expiry 59s", bas.Options{ApprovalExpiry: 59 * time.Second}, "Options.ApprovalExpiry is 59s; use at least 1m, or 0 for 7 days"},
		{"grace 1ns", bas.Options{Grace: 1}, ""},
		{"grace -1s", bas.Options{Grace: -time.Second}, "Options.Grace is -1s"},
		{"call timeout -1s", bas.Options{CallTimeout: -time.Second}, "Options.CallTimeout is -1s"},
		{"max upload -1", bas.Options{MaxUploadBytes: -1}, "Options.MaxUploadBytes is -1"},
		{"subscribe buffer 1048576", bas.Options{SubscribeBuffer: 1 << 20}, ""},
		{"subscribe buffer 1048577", bas.Options{SubscribeBuffer: 1<<20 + 1}, "Options.SubscribeBuffer is 1048577"},
		{"empty plugin path", bas.Options{Plugins: []string{"a", ""}}, `Options.Plugins[1] is ""`},
		{"checksum of 63 hex digits", bas.Options{PluginChecksums: map[string]string{"erp": sum[:63]}},
			`Options.PluginChecksums["erp"] is "` + sum[:63] + `"; give the plugin's SHA-256 as 64 hex digits`},
		{"checksum of 64 hex digits", bas.Options{PluginChecksums: map[string]string{"erp": sum}}, ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := test.opts
			opts.InMemory = true
			ws, err := bas.Open(context.Background(), opts)
			if test.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				ws.Close()
				return
			}
			if err == nil {
				ws.Close()
				t.Fatalf("opened; want %q", test.want)
			}
			if !strings.Contains(err.Error(), test.want) || !errors.Is(err, bas.ErrInvalid) {
				t.Errorf("error %q (invalid: %v), want it to say %q", err, errors.Is(err, bas.ErrInvalid), test.want)
			}
		})
	}
}
