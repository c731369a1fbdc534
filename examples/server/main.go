// Command server runs a bas workspace standalone and serves its API under
// /api.
//
//	go run ./examples/server -dev
//
// Flags:
//
//	-addr     listen address (default 127.0.0.1:8080)
//	-data     Badger directory (default ./data)
//	-store    where state lives: empty for Badger in -data, or a
//	          PostgreSQL connection string (postgres://user@host:5432/db)
//	-dev      enable development login (POST /api/v1/auth/dev-login)
//	-plugins  a directory of provider plugins to load
//
// SIGINT or SIGTERM shuts it down gracefully.
//
// Connections are bounded in time (see defaultTimeouts): a client has 10
// seconds to send its headers and 60 to send its whole request, a response
// must be written within 90 seconds, and an idle keep-alive connection is
// closed after 120; a body that does not arrive in time is answered 400.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout *os.File) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", "./data", "Badger data directory")
	storeURL := fs.String("store", "", "PostgreSQL connection string (postgres://user@host:5432/db) to keep state in instead of Badger in -data")
	dev := fs.Bool("dev", false, "enable development login")
	pluginDir := fs.String("plugins", "", "directory of provider plugins")
	publicURL := fs.String("public-url", "", "base URL of the API in emailed links (default http://<addr>/api)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *publicURL == "" {
		*publicURL = "http://" + *addr + "/api"
	}
	where := *data
	if *storeURL != "" {
		if !strings.HasPrefix(*storeURL, "postgres://") && !strings.HasPrefix(*storeURL, "postgresql://") {
			return fmt.Errorf("-store %q: want a postgres:// or postgresql:// connection string", redact(*storeURL))
		}
		where = redact(*storeURL)
	}
	ws, err := bas.Open(ctx, bas.Options{Dir: *data, PostgresDSN: *storeURL, Logger: logger, PluginDir: *pluginDir, PublicURL: *publicURL})
	if err != nil {
		return err
	}
	defer ws.Close()

	api := httpapi.New(ws, httpapi.Options{DevLogin: *dev, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle(api.BasePath()+"/", api)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := newServer(mux, defaultTimeouts())
	base := "http://" + ln.Addr().String() + api.BasePath()
	fmt.Fprintf(stdout, "bas is serving %s/v1 (data in %s)\n", base, where)
	if *dev {
		fmt.Fprintf(stdout, "development login is on; try:\n  curl -s -X POST %s/v1/auth/dev-login -H 'Content-Type: application/json' -d '{}'\n", base)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
		logger.Info("shutting down")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// timeouts bound a connection's phases (see net/http.Server).
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts let a 25 MiB upload arrive at about 0.5 MB/s and its
// extraction (at most 20 seconds) finish, and free slow or idle
// connections soon after.
func defaultTimeouts() timeouts {
	return timeouts{readHeader: 10 * time.Second, read: 60 * time.Second, write: 90 * time.Second, idle: 120 * time.Second}
}

// newServer is the HTTP server of h: every phase of a connection bounded,
// headers at most 64 KiB.
func newServer(h http.Handler, t timeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read,
		WriteTimeout: t.write, IdleTimeout: t.idle, MaxHeaderBytes: 64 << 10}
}

// redact hides the password of a connection string.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable connection string)"
	}
	return u.Redacted()
}
