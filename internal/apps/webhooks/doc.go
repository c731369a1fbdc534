// Package webhooks is the workspace's outbound webhooks: subscriptions per
// workspace to event names (exact, "invoicing.*" or "*"), deliveries
// written in the transaction that emits the event, signed, retried and
// logged.
//
// # Delivery
//
// The run engine hands every event to Service.Tap before it commits; a
// delivery record per matching active subscription, and its entry in a
// due-time index, are written in that same transaction, so an event is
// delivered if and only if it happened. One scheduler goroutine sleeps
// until the earliest due entry (a Clock timer; it is woken when an
// earlier one is written), then hands due deliveries to senders, at most
// Config.PerTenant at a time for one workspace, so a slow receiver holds
// only its own workspace's deliveries.
//
// A delivery is a POST of the event's JSON with the headers Bas-Event,
// Bas-Delivery and Bas-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body>" keyed by the subscription's secret>. A 2xx answer is a
// success; anything else (or no answer within Config.Timeout) is retried
// with exponential backoff and jitter (a delay drawn between a tenth of and
// the whole of Config.RetryBase doubled per attempt, up to
// Config.RetryMax) until Config.RetryFor (24 h) after the delivery was
// made, then the delivery is marked failed. A subscription whose
// deliveries have failed without a success for RetryFor is disabled, with
// an audit entry. A finished delivery leaves the log after Config.Keep (30
// days), through the same due index.
//
// # Address guard
//
// Only http and https URLs are accepted. The host is resolved (through
// Config.Resolver) and a URL whose addresses include a loopback, private,
// link-local (cloud metadata), shared, unspecified or multicast address
// is refused, when a subscription is saved and again when each connection
// is dialled (redirects included, at most 3), unless Config.Allow admits
// the address.
package webhooks
