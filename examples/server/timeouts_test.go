package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
)

// TestServerTimeouts: the server bounds every phase of a connection.
func TestServerTimeouts(t *testing.T) {
	srv := newServer(http.NotFoundHandler(), defaultTimeouts())
	got := []time.Duration{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout}
	want := []time.Duration{10 * time.Second, 60 * time.Second, 90 * time.Second, 120 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("timeouts %v, want %v", got, want)
			break
		}
	}
	if srv.MaxHeaderBytes != 64<<10 {
		t.Errorf("MaxHeaderBytes %d", srv.MaxHeaderBytes)
	}
}

// TestSlowBodyIsCut: a client that sends its headers and then stalls
// mid-body is answered 400 once the read timeout passes, and its
// connection is closed, instead of being held.
func TestSlowBodyIsCut(t *testing.T) {
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	api := httpapi.New(ws, httpapi.Options{DevLogin: true})
	// The read timeout runs from the accept: 2s leaves a loaded machine
	// the time to send the headers (with 300ms the client was sometimes
	// cut before it wrote them, and got no answer at all).
	srv := newServer(api, timeouts{readHeader: 5 * time.Second, read: 2 * time.Second, write: 5 * time.Second, idle: time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A safety net for a broken server, not a wait: the answer comes when
	// the server's read timeout passes.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /api/v1/auth/dev-login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "could not be read") {
		t.Errorf("slow body: %d %s", resp.StatusCode, raw)
	}
}
