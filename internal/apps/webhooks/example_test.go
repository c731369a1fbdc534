package webhooks_test

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/apps/webhooks"
)

// Sign makes the Bas-Signature header a receiver checks: the HMAC-SHA256
// of "<unix seconds>.<body>" under the webhook's secret.
func ExampleSign() {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	fmt.Println(webhooks.Sign("whsec_test", at, []byte(`{"id":"evt_1"}`)))
	// Output: t=1795608000,v1=756d4b6bba4e4084c45292f05ef1e52116d5e875c2c5341ec5482a9b3e7b9367
}
