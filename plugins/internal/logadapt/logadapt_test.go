package logadapt

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

func TestHclog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := Hclog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	})))
	named := l.Named("acme").With("pid", 7)
	named.Info("plugin started", "port", 9)
	named.Debug("hidden")
	named.Trace("hidden too")
	l.Log(hclog.Error, "broken")
	l.StandardLogger(nil).Print("from the standard logger")

	want := []string{
		`level=INFO msg="plugin started" pid=7 logger=acme port=9`,
		`level=ERROR msg=broken`,
		`level=INFO msg="from the standard logger"`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(buf.String()), "\n")); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	for _, test := range []struct {
		name string
		got  any
		want any
	}{
		{"level", l.GetLevel(), hclog.Info},
		{"is debug", l.IsDebug(), false},
		{"is info", l.IsInfo(), true},
		{"name", named.Name(), "acme"},
		{"nested name", named.Named("x").Name(), "acme.x"},
		{"implied", named.ImpliedArgs(), []any{"pid", 7}},
	} {
		if diff := cmp.Diff(test.want, test.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
