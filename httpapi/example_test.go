package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
)

// The API mounts on the host's own mux under a base path. Development login
// (never in production) makes a demo admin whose token then creates and
// lists processes.
func Example() {
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()

	mux := http.NewServeMux()
	mux.Handle("/api/", httpapi.New(ws, httpapi.Options{BasePath: "/api", DevLogin: true}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	call := func(method, path, token, body string) (int, []byte) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			return 0, []byte(err.Error())
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	status, body := call("GET", "/api/v1/processes", "", "")
	fmt.Println("without a token:", status, strings.TrimSpace(string(body)))

	status, body = call("POST", "/api/v1/auth/dev-login", "", `{}`)
	var session struct {
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal(body, &session); err != nil {
		fmt.Println(status, err)
		return
	}
	fmt.Println("dev-login:", status, session.Roles)

	status, body = call("POST", "/api/v1/processes", session.Token, `{
		"name": "Route invoices",
		"function": "finance",
		"trigger": {"type": "manual"},
		"steps": [{"key": "route", "type": "route", "config": {
			"input": {"amount_cents": 250000},
			"rules": [{"id": "large", "when": {"amount_cents": {"gte": 100000}}, "queue": "controller"}],
			"default": {"queue": "clerks"}
		}}]
	}`)
	var created struct {
		ID      string `json:"id"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		fmt.Println(status, err)
		return
	}
	fmt.Println("create:", status, strings.HasPrefix(created.ID, "prc_"), created.Version)

	status, body = call("GET", "/api/v1/processes", session.Token, "")
	var list []struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
		Enabled bool   `json:"enabled"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		fmt.Println(status, err)
		return
	}
	fmt.Printf("list: %d %+v\n", status, list)
	// Output:
	// without a token: 401 {"detail":"not authenticated"}
	// dev-login: 201 [admin]
	// create: 201 true 1
	// list: 200 [{Name:Route invoices Version:1 Enabled:true}]
}
