package registry_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestCatalogGolden pins every standard capability's schemas: a change to
// an argument or result type shows up as a diff of testdata/catalog.golden
// (run go test -update to accept it).
func TestCatalogGolden(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(registry.Standard(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "catalog.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (run go test -update to write it): %v", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("the catalog changed (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
}

func TestRecipients(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in   string
		want capability.Recipients
		err  bool
	}{
		{`"a@example.com"`, capability.Recipients{"a@example.com"}, false},
		{`["a@example.com","b@example.com"]`, capability.Recipients{"a@example.com", "b@example.com"}, false},
		{`[]`, capability.Recipients{}, false},
		{`42`, nil, true},
	} {
		var got capability.Recipients
		err := json.Unmarshal([]byte(test.in), &got)
		if (err != nil) != test.err {
			t.Errorf("%s: error %v", test.in, err)
			continue
		}
		if diff := cmp.Diff(test.want, got); !test.err && diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.in, diff)
		}
	}
	var args capability.EmailSendArgs
	if err := json.Unmarshal([]byte(`{"to":"a@example.com","subject":"s","body":"b"}`), &args); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(args)
	if want := `{"to":["a@example.com"],"subject":"s","body":"b"}`; string(out) != want {
		t.Errorf("encoded %s, want %s", out, want)
	}
}

func TestLedgerBalanced(t *testing.T) {
	t.Parallel()
	a := capability.LedgerPostArgs{Lines: []capability.LedgerLine{{Account: "6000", DebitCents: 500}, {Account: "2000", CreditCents: 500}}}
	if !a.Balanced() {
		t.Error("a balanced entry is not Balanced")
	}
	a.Lines[1].CreditCents = 400
	if a.Balanced() {
		t.Error("an unbalanced entry is Balanced")
	}
}
