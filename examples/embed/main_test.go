package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"-data", filepath.Join(t.TempDir(), "data")}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, out.String())
		}
		// The approval line depends on the workspace's autonomy settings;
		// the rest does not.
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(l, "approval asked: ") {
				lines = append(lines, l)
			}
		}
		want := []string{
			`process "US supplier invoice", version 1`,
			`run completed`,
			`  check    completed {"issues":[],"status":"passed"}`,
			`  convert  completed {"eur_cents":138000,"rate":0.92}`,
			`  route    completed {"matched_rule":"large","owner":"","priority":"normal","queue":"treasury"}`,
		}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("run %v output (-want +got):\n%s", args, diff)
		}
	}
}

func TestRates(t *testing.T) {
	t.Parallel()
	r := rates{eurPerUSD: 9200}
	for _, c := range []struct{ args, want string }{
		{`{"usd_cents": 10000}`, `{"eur_cents":9200,"rate":0.92}`},
		{`{"usd_cents": 1}`, `{"eur_cents":0,"rate":0.92}`},
	} {
		got, err := r.Call(context.Background(), capabilityCall(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("convert %s = %s, want %s", c.args, got, c.want)
		}
	}
	if _, err := r.Call(context.Background(), capabilityCall(`[1]`)); err == nil {
		t.Error("a call with arguments that are not an object succeeded")
	}
}

func capabilityCall(args string) capability.Call {
	return capability.Call{Tenant: tenant, Capability: "fx.convert", Args: json.RawMessage(args)}
}
