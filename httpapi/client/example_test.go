package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/client"
)

// A client signs in, creates a company once whatever the retries, and reads
// every company page by page.
func Example() {
	ctx := context.Background()
	ws, _ := bas.Open(ctx, bas.Options{InMemory: true})
	defer ws.Close()
	srv := httptest.NewServer(httpapi.New(ws, httpapi.Options{DevLogin: true}))
	defer srv.Close()

	anon, _ := client.New(srv.URL+"/api", "")
	login, _ := anon.DevLoginWithResponse(ctx, nil, client.DevLoginIn{})
	c, _ := client.New(srv.URL+"/api", login.JSON201.Token)

	key := client.NewIdempotencyKey()
	for range 2 { // a retry with the same key answers the first result
		r, err := c.CompanyCreateWithResponse(ctx, &client.CompanyCreateParams{IdempotencyKey: &key},
			client.CompanyIn{Name: "Acme"})
		if err == nil {
			err = client.Check(r.HTTPResponse, r.Body)
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	for co, err := range client.All(ctx, func(ctx context.Context, cursor *string) ([]client.Company, *http.Response, error) {
		r, err := c.CompaniesListWithResponse(ctx, &client.CompaniesListParams{Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return *r.JSON200, r.HTTPResponse, client.Check(r.HTTPResponse, r.Body)
	}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(co.Name)
	}
	// Output: Acme
}
