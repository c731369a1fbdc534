// Package browsertest starts a real headless Chromium for the end-to-end
// tests of the web console, driven over CDP with chromedp, and makes the
// files those tests upload. A test that needs the browser calls Require:
// without Chromium it skips with a clear message, except in CI (CI=true),
// where a missing browser fails.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-pdf/fpdf"
)

// Lookup returns the path of a Chromium on PATH, if there is one.
func Lookup() (string, bool) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// Require returns the path of a Chromium on PATH; without one it skips
// the test, or fails it in CI (CI=true), where .ci/run installs Debian's
// chromium.
func Require(t testing.TB) string {
	t.Helper()
	if p, ok := Lookup(); ok {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH: CI must install it (.ci/run installs Debian's chromium)")
	}
	t.Skip("no Chromium on PATH (install Debian's chromium to run the browser tests)")
	return ""
}

// Start starts the headless browser at exe with a 1280x860 window and
// one tab, and returns the tab's context, which ends after timeout; the
// browser is closed when the test ends.
func Start(t testing.TB, exe string, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, chromedp.WindowSize(1280, 860), chromedp.DisableGPU)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser and its tab
		t.Fatalf("start %s: %v", exe, err)
	}
	return ctx
}

// InvoicePDF is a one-page supplier invoice (Acme Tools Ltd, EUR
// 1,250.00) without its invoice number: the supplier_invoice document type
// puts it in review with one error, required:invoice_number.
func InvoicePDF() ([]byte, error) {
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.SetFont("Helvetica", "B", 16)
	p.Text(20, 20, "INVOICE")
	p.SetFont("Helvetica", "", 11)
	for i, l := range []string{"Supplier: Acme Tools Ltd", "Invoice date: 2026-11-02", "Due date: 2026-12-02",
		"Currency: EUR", "Total: 1,250.00"} {
		p.Text(20, 35+float64(i)*7, l)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// FailOnExceptions collects the JavaScript exceptions the pages of ctx
// throw from now on; at the end of t, any of them fails t, listed with
// where they were thrown.
func FailOnExceptions(t testing.TB, ctx context.Context) {
	t.Helper()
	var (
		mu     sync.Mutex
		thrown []string
	)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				mu.Lock()
				thrown = append(thrown, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m.Text))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(thrown) > 0 {
			t.Errorf("the pages threw:\n%s", strings.Join(thrown, "\n"))
		}
	})
}
