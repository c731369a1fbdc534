// Command server runs a bas workspace standalone and serves its API under
// /api and the web console (package httpapi/console) at /.
//
//	go run ./examples/server -dev
//
// Flags:
//
//	-addr     listen address (default 127.0.0.1:8080)
//	-data     Badger directory (default ./data)
//	-dev      enable development login (POST /api/v1/auth/dev-login)
//	-plugins  a directory of provider plugins to load
//
// SIGINT or SIGTERM shuts it down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/console"
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
	dev := fs.Bool("dev", false, "enable development login")
	pluginDir := fs.String("plugins", "", "directory of provider plugins")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ws, err := bas.Open(ctx, bas.Options{Dir: *data, Logger: logger, PluginDir: *pluginDir})
	if err != nil {
		return err
	}
	defer ws.Close()

	api := httpapi.New(ws, httpapi.Options{DevLogin: *dev, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle(api.BasePath()+"/", api)
	mux.Handle("/", console.New(api, console.Options{APIBase: api.BasePath(), DevLogin: *dev, Logger: logger}))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	base := "http://" + ln.Addr().String() + api.BasePath()
	fmt.Fprintf(stdout, "bas is serving %s/v1 (data in %s)\n", base, *data)
	fmt.Fprintf(stdout, "the console is at http://%s/\n", ln.Addr().String())
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
