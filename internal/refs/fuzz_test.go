package refs_test

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/refs"
)

// FuzzResolve: no config or data panics Paths, Check, Resolve or Text; a
// config without "${" resolves to itself.
func FuzzResolve(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"t": "${subject.label}"}`, `{"subject": {"label": "x"}}`},
		{`{"t": "a ${x} b ${y.0.z}"}`, `{"x": 1, "y": [{"z": [1, 2]}]}`},
		{`{"t": "$${x}"}`, `{}`},
		{`{"t": "${"}`, `{}`},
		{`{"t": "${}"}`, `{}`},
		{`{"t": "${x"}`, `{"x": 1}`},
		{`{"t": "${x.}"}`, `{"x": {"": 1}}`},
		{`{"t": "${x.99999999999999999999}"}`, `{"x": [1]}`},
		{`{"t": "${x.-1}"}`, `{"x": [1]}`},
		{`{"t": ["${x}", {"u": "${x}"}]}`, `{"x": {"deep": [[[]]]}}`},
		{`"${x}"`, `{"x": null}`},
		{`{"t": "${${x}}"}`, `{"x": "y"}`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, config, data string) {
		var c any
		var d map[string]any
		if json.Unmarshal([]byte(config), &c) != nil || json.Unmarshal([]byte(data), &d) != nil {
			return
		}
		_ = refs.Paths(c)
		_ = refs.Check(c, "config")
		out, err := refs.Resolve(c, d)
		if err == nil {
			_, _ = refs.Text(out)
		}
		_, _ = refs.Text(c)
	})
}
