package webhooks

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/cockroachdb/errors"
)

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blocked are the ranges refused unless Config.Allow admits them: what is
// not the public internet.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this" network, unspecified
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // shared (carrier NAT; some cloud metadata)
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, cloud metadata 169.254.169.254
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/128"),          // unspecified
	netip.MustParsePrefix("::1/128"),         // loopback
	netip.MustParsePrefix("fc00::/7"),        // unique local (private; fd00:ec2::254 metadata)
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("ff00::/8"),        // multicast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2002::/16"),       // 6to4 (embeds any IPv4)
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped (checked unmapped)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (embeds any IPv4)
	netip.MustParsePrefix("2001::/32"),       // Teredo (embeds any IPv4)
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

// errRefused marks an address the guard refuses.
var errRefused = errors.New("webhooks: address not allowed")

// allowed reports whether a may be dialled.
func (s *Service) allowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.cfg.Allow {
		if p.Contains(a) {
			return true
		}
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkURL parses raw and checks its scheme and every address its host
// resolves to; the error is a sentence for a 422.
func (s *Service) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must use http or https")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	_, err = s.resolve(ctx, u.Hostname())
	return err
}

// resolve returns host's addresses when every one is allowed.
func (s *Service) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(host, ".")
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = s.cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, errors.Newf("host %s does not resolve", host)
		}
	}
	for _, a := range addrs {
		if !s.allowed(a) {
			return nil, errors.Mark(errors.Newf("resolves to %s, a loopback, private, link-local or otherwise non-public address", a.Unmap()), errRefused)
		}
	}
	return addrs, nil
}

// dial connects to addr's host only through addresses the guard allows,
// so a name that resolves differently at delivery (or a redirect) cannot
// reach a refused address.
func (s *Service) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := s.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}
