package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/console"
)

// Mount the console at the root of the origin that serves the API, as
// examples/server does, and ask whether the browser is signed in.
func Example() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	api := httpapi.New(ws, httpapi.Options{DevLogin: true})
	mux := http.NewServeMux()
	mux.Handle(api.BasePath()+"/", api)
	mux.Handle("/", console.New(api, console.Options{APIBase: api.BasePath(), DevLogin: true}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/console/session")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(string(body))
	// Output:
	// {"signed_in":false,"dev_login":true,"me":null}
}
