package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestLoadOrders(t *testing.T) {
	t.Parallel()
	const header = "number,supplier,currency,status,sku,description,quantity,unit_cents\n"
	for _, test := range []struct {
		name    string
		csv     string
		want    map[string]*purchaseOrder
		wantErr string
	}{
		{"two lines", header + "PO-1,S,EUR,open,A,Apple,2,150\nPO-1,S,EUR,open,B,Pear,1,99\n", map[string]*purchaseOrder{
			"PO-1": {Number: "PO-1", Supplier: "S", Currency: "EUR", Status: "open", TotalCents: 399,
				Lines: []line{{"A", "Apple", 2, 150}, {"B", "Pear", 1, 99}}},
		}, ""},
		{"header only", header, map[string]*purchaseOrder{}, ""},
		{"wrong column", strings.Replace(header, "sku", "item", 1), nil, `column 5 is "item", want "sku"`},
		{"bad quantity", header + "PO-1,S,EUR,open,A,Apple,two,150\n", nil, "row 2: quantity and unit_cents must be whole numbers"},
		{"inconsistent order", header + "PO-1,S,EUR,open,A,Apple,2,150\nPO-1,T,EUR,open,B,Pear,1,99\n", nil, "row 3: supplier, currency and status differ"},
		{"short row", header + "PO-1,S,EUR\n", nil, "wrong number of fields"},
		{"empty file", "", nil, "reading the header"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "po.csv")
			if err := os.WriteFile(path, []byte(test.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := loadOrders(path)
			if test.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), test.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, test.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("orders (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProviderCall(t *testing.T) {
	t.Parallel()
	p := newProvider("purchase_orders.csv")
	if p.loadErr != nil {
		t.Fatal(p.loadErr)
	}
	ctx := context.Background()
	get := func(args string) (json.RawMessage, error) {
		return p.Call(ctx, capability.Call{Tenant: "t1", Capability: capGet, Args: json.RawMessage(args)})
	}
	out, err := get(`{"number":"PO-1002"}`)
	if err != nil {
		t.Fatal(err)
	}
	var po purchaseOrder
	if err := json.Unmarshal(out, &po); err != nil || po.TotalCents != 3*109900+3*18900 || len(po.Lines) != 2 {
		t.Errorf("PO-1002 = %+v, %v", po, err)
	}
	for _, test := range []struct {
		args string
		want error
	}{
		{`{"number":"PO-0"}`, errs.NotFound},
		{`{}`, errs.Invalid},
		{`{"number":7}`, errs.Invalid},
	} {
		if _, err := get(test.args); !errors.Is(err, test.want) {
			t.Errorf("%s: err = %v, want %v", test.args, err, test.want)
		}
	}
	if _, err := p.Call(ctx, capability.Call{Capability: "erp.invoice.get"}); !errors.Is(err, errs.Invalid) {
		t.Errorf("another capability: %v, want errs.Invalid", err)
	}

	missing := newProvider(filepath.Join(t.TempDir(), "none.csv"))
	if h := missing.Health(ctx); h.Status != "failed" {
		t.Errorf("health without a CSV = %+v, want failed", h)
	}
	if _, err := missing.Call(ctx, capability.Call{Capability: capGet, Args: json.RawMessage(`{"number":"PO-1001"}`)}); !errors.Is(err, errs.Unavailable) {
		t.Errorf("call without a CSV: %v, want errs.Unavailable", err)
	}
}
