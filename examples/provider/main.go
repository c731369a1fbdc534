// Command provider is an example bas plugin: the "acme-erp" app, a
// purchase-order lookup backed by a CSV file.
//
// It fills the capability erp.purchase_order.get. Given {"number":
// "PO-1001"} it returns the order (supplier, currency, status, lines and
// total in cents) and emits the event erp.purchase_order.looked_up to the
// workspace; an unknown number is a NotFound error.
//
// The CSV has a header and one row per order line:
//
//	number,supplier,currency,status,sku,description,quantity,unit_cents
//
// Its path is $BAS_PO_CSV, or purchase_orders.csv next to the binary. The
// sample serves the same orders to every tenant; a real provider keeps each
// tenant's data apart (capability.Call.Tenant).
//
// Build it and drop the binary in the host's plugin directory:
//
//	go build -o plugins/acme-erp ./examples/provider
//	cp examples/provider/purchase_orders.csv plugins/
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/sdk"
	"github.com/cockroachdb/errors"
)

func main() {
	sdk.Serve(newProvider(csvPath()))
}

// csvPath is $BAS_PO_CSV, or purchase_orders.csv next to the binary.
func csvPath() string {
	if p := os.Getenv("BAS_PO_CSV"); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return "purchase_orders.csv"
	}
	return filepath.Join(filepath.Dir(exe), "purchase_orders.csv")
}

type line struct {
	SKU         string `json:"sku"`
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
	UnitCents   int64  `json:"unit_cents"`
}

type purchaseOrder struct {
	Number     string `json:"number"`
	Supplier   string `json:"supplier"`
	Currency   string `json:"currency"`
	TotalCents int64  `json:"total_cents"`
	Lines      []line `json:"lines"`
	Status     string `json:"status"`
}

// provider answers erp.purchase_order.get from the orders read at start.
type provider struct {
	sdk.HostRef // SetHost, and Emit to the workspace
	path        string
	orders      map[string]*purchaseOrder
	loadErr     error
}

func newProvider(path string) *provider {
	p := &provider{path: path}
	p.orders, p.loadErr = loadOrders(path)
	return p
}

const (
	capGet      = "erp.purchase_order.get"
	evLookedUp  = "erp.purchase_order.looked_up"
	argsSchema  = `{"type":"object","required":["number"],"additionalProperties":false,"properties":{"number":{"type":"string","minLength":1,"maxLength":40}}}`
	lineSchema  = `{"type":"object","required":["sku","description","quantity","unit_cents"],"properties":{"sku":{"type":"string"},"description":{"type":"string"},"quantity":{"type":"integer"},"unit_cents":{"type":"integer"}}}`
	orderSchema = `{"type":"object","required":["number","supplier","currency","total_cents","lines","status"],"properties":{` +
		`"number":{"type":"string"},"supplier":{"type":"string"},"currency":{"type":"string"},"total_cents":{"type":"integer"},` +
		`"lines":{"type":"array","items":` + lineSchema + `},"status":{"type":"string"}}}`
)

func (p *provider) Info() capability.Info {
	return capability.Info{
		ID:           "acme-erp", // the host lists it as plugin.acme-erp
		Name:         "ACME ERP",
		Capabilities: []string{capGet},
		App: &capability.App{
			ID:           "acme-erp",
			Name:         "ACME ERP",
			Events:       capability.Events{Emits: []string{evLookedUp}},
			Capabilities: []string{capGet},
		},
	}
}

// Capabilities describes erp.purchase_order.get for workspaces that do not
// know it yet.
func (p *provider) Capabilities() []capability.Capability {
	return []capability.Capability{{
		ID:          capGet,
		Name:        "Get purchase order",
		Description: "Looks up a purchase order in ACME ERP by its number.",
		Args:        json.RawMessage(argsSchema),
		Result:      json.RawMessage(orderSchema),
	}}
}

// Health is failed when the CSV could not be read.
func (p *provider) Health(context.Context) capability.Health {
	if p.loadErr != nil {
		return capability.Health{Status: "failed", Detail: p.loadErr.Error()}
	}
	return capability.Health{Status: "connected"}
}

func (p *provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	if call.Capability != capGet {
		return nil, sdk.Invalidf([]any{"capability"}, "value_error", "acme-erp does not provide %s", call.Capability)
	}
	if p.loadErr != nil {
		return nil, sdk.Unavailablef("purchase orders are unavailable: %v", p.loadErr)
	}
	var args struct {
		Number string `json:"number"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil || args.Number == "" {
		return nil, sdk.Invalidf([]any{"args", "number"}, "missing", "a purchase order number is required")
	}
	po, ok := p.orders[args.Number]
	if !ok {
		return nil, sdk.NotFoundf("purchase order %s not found", args.Number)
	}
	out, err := json.Marshal(po)
	if err != nil {
		return nil, err
	}
	data, _ := json.Marshal(map[string]any{
		"number": po.Number, "supplier": po.Supplier, "currency": po.Currency, "total_cents": po.TotalCents,
	})
	if err := p.Emit(ctx, capability.Event{Tenant: call.Tenant, Name: evLookedUp, Data: data}); err != nil {
		// The lookup stands without its event; say so in the host's log.
		if h := p.Host(); h != nil {
			h.Logger().Warn("could not emit event", "event", evLookedUp, "error", err)
		}
	}
	return out, nil
}

// loadOrders reads the CSV at path into orders by number.
func loadOrders(path string) (map[string]*purchaseOrder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 8
	header, err := r.Read()
	if err != nil {
		return nil, errors.Wrapf(err, "%s: reading the header", path)
	}
	want := []string{"number", "supplier", "currency", "status", "sku", "description", "quantity", "unit_cents"}
	for i, h := range want {
		if header[i] != h {
			return nil, errors.Newf("%s: column %d is %q, want %q", path, i+1, header[i], h)
		}
	}
	orders := map[string]*purchaseOrder{}
	for row := 2; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return orders, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "%s", path)
		}
		qty, err1 := strconv.ParseInt(rec[6], 10, 64)
		unit, err2 := strconv.ParseInt(rec[7], 10, 64)
		if err1 != nil || err2 != nil || qty < 0 || unit < 0 {
			return nil, errors.Newf("%s: row %d: quantity and unit_cents must be whole numbers", path, row)
		}
		po := orders[rec[0]]
		if po == nil {
			po = &purchaseOrder{Number: rec[0], Supplier: rec[1], Currency: rec[2], Status: rec[3]}
			orders[rec[0]] = po
		} else if po.Supplier != rec[1] || po.Currency != rec[2] || po.Status != rec[3] {
			return nil, errors.Newf("%s: row %d: supplier, currency and status differ from the order's first line", path, row)
		}
		po.Lines = append(po.Lines, line{SKU: rec[4], Description: rec[5], Quantity: qty, UnitCents: unit})
		po.TotalCents += qty * unit
	}
}
