package sim

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	rbac "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// request is what Envoy's RBAC filter sees of an inbound request: the peer's mTLS identity, the
// connection's source address and the HTTP request.
type request struct {
	principal string // SPIFFE URI of the client certificate, "" for plaintext
	sourceIP  string // the connection's peer address (ipBlocks)
	remoteIP  string // the original client address, from X-Forwarded-For (remoteIpBlocks)
	host      string // :authority
	port      uint32 // the port the connection arrived on (destination_port); 0: not given, a rule that names one fails the test
	method    string
	path      string
	headers   map[string]string
	// The payload of a validated JWT, by dotted claim path (a string or a []string per claim); nil
	// without a token. Envoy's jwt_authn filter puts it in dynamic metadata, where Istio's RBAC
	// rules for request principals and claims look.
	jwt map[string]any
}

// rbacFilter is the RBAC configuration of an HTTP connection manager's envoy.filters.http.rbac filter.
func rbacFilter(t *testing.T, h *hcm.HttpConnectionManager) *rbac.RBAC {
	t.Helper()
	f := httpFilter(h, "envoy.filters.http.rbac")
	if f == nil {
		return nil
	}
	cfg := &rbachttp.RBAC{}
	if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.GetRules()
}

// allowed evaluates an RBAC policy set the way Envoy does (for the matchers Istio generates for
// sidecars): ALLOW lets the request through when some policy has a matching permission and a
// matching principal; DENY refuses it then. Unknown matcher kinds fail the test rather than guess.
func allowed(t *testing.T, rules *rbac.RBAC, r request) bool {
	t.Helper()
	matched := false
	for _, p := range rules.GetPolicies() {
		perm := false
		for _, x := range p.Permissions {
			if permissionMatches(t, x, r) {
				perm = true
				break
			}
		}
		prin := false
		for _, x := range p.Principals {
			if principalMatches(t, x, r) {
				prin = true
				break
			}
		}
		if perm && prin {
			matched = true
			break
		}
	}
	switch rules.GetAction() {
	case rbac.RBAC_ALLOW:
		return matched
	case rbac.RBAC_DENY:
		return !matched
	default:
		t.Fatalf("RBAC action %v not evaluated here", rules.GetAction())
		return false
	}
}

func stringMatches(t *testing.T, m *matcher.StringMatcher, v string) bool {
	t.Helper()
	if m.GetIgnoreCase() {
		v = strings.ToLower(v)
	}
	lc := func(s string) string {
		if m.GetIgnoreCase() {
			return strings.ToLower(s)
		}
		return s
	}
	switch p := m.GetMatchPattern().(type) {
	case *matcher.StringMatcher_Exact:
		return v == lc(p.Exact)
	case *matcher.StringMatcher_Prefix:
		return strings.HasPrefix(v, lc(p.Prefix))
	case *matcher.StringMatcher_Suffix:
		return strings.HasSuffix(v, lc(p.Suffix))
	case *matcher.StringMatcher_Contains:
		return strings.Contains(v, lc(p.Contains))
	case *matcher.StringMatcher_SafeRegex:
		return regexp.MustCompile("^(?:" + p.SafeRegex.GetRegex() + ")$").MatchString(v)
	}
	t.Fatalf("string matcher %v not evaluated here", m)
	return false
}

func headerMatches(t *testing.T, h *route.HeaderMatcher, r request) bool {
	t.Helper()
	var v string
	var present bool
	switch h.Name {
	case ":method":
		v, present = r.method, true
	case ":path":
		v, present = r.path, true
	case ":authority", "host":
		v, present = r.host, true
	default:
		v, present = r.headers[strings.ToLower(h.Name)]
	}
	var ok bool
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *route.HeaderMatcher_StringMatch:
		ok = present && stringMatches(t, s.StringMatch, v)
	case *route.HeaderMatcher_ExactMatch:
		ok = present && v == s.ExactMatch
	case *route.HeaderMatcher_PrefixMatch:
		ok = present && strings.HasPrefix(v, s.PrefixMatch)
	case *route.HeaderMatcher_SuffixMatch:
		ok = present && strings.HasSuffix(v, s.SuffixMatch)
	case *route.HeaderMatcher_PresentMatch:
		ok = present == s.PresentMatch
	default:
		t.Fatalf("header matcher %v not evaluated here", h)
	}
	return ok != h.InvertMatch
}

func cidrMatches(t *testing.T, c interface {
	GetAddressPrefix() string
	GetPrefixLen() interface{ GetValue() uint32 }
}, ip string) bool {
	t.Helper()
	_, n, err := net.ParseCIDR(fmt.Sprintf("%s/%d", c.GetAddressPrefix(), c.GetPrefixLen().GetValue()))
	if err != nil {
		t.Fatal(err)
	}
	return n.Contains(net.ParseIP(ip))
}

func permissionMatches(t *testing.T, p *rbac.Permission, r request) bool {
	t.Helper()
	switch x := p.GetRule().(type) {
	case *rbac.Permission_Any:
		return x.Any
	case *rbac.Permission_AndRules:
		for _, y := range x.AndRules.Rules {
			if !permissionMatches(t, y, r) {
				return false
			}
		}
		return true
	case *rbac.Permission_OrRules:
		for _, y := range x.OrRules.Rules {
			if permissionMatches(t, y, r) {
				return true
			}
		}
		return false
	case *rbac.Permission_NotRule:
		return !permissionMatches(t, x.NotRule, r)
	case *rbac.Permission_Header:
		return headerMatches(t, x.Header, r)
	case *rbac.Permission_UrlPath:
		return stringMatches(t, x.UrlPath.GetPath(), strings.SplitN(r.path, "?", 2)[0])
	case *rbac.Permission_DestinationPort:
		if r.port == 0 {
			t.Fatalf("a rule names destination port %d: give the request the port it arrives on", x.DestinationPort)
		}
		return r.port == x.DestinationPort
	}
	t.Fatalf("permission %v not evaluated here", p)
	return false
}

func principalMatches(t *testing.T, p *rbac.Principal, r request) bool {
	t.Helper()
	switch x := p.GetIdentifier().(type) {
	case *rbac.Principal_Any:
		return x.Any
	case *rbac.Principal_AndIds:
		for _, y := range x.AndIds.Ids {
			if !principalMatches(t, y, r) {
				return false
			}
		}
		return true
	case *rbac.Principal_OrIds:
		for _, y := range x.OrIds.Ids {
			if principalMatches(t, y, r) {
				return true
			}
		}
		return false
	case *rbac.Principal_NotId:
		return !principalMatches(t, x.NotId, r)
	case *rbac.Principal_Authenticated_:
		return r.principal != "" && stringMatches(t, x.Authenticated.GetPrincipalName(), r.principal)
	case *rbac.Principal_FilterState:
		if x.FilterState.GetKey() != "io.istio.peer_principal" {
			t.Fatalf("filter state principal %v not evaluated here", x.FilterState)
		}
		return r.principal != "" && stringMatches(t, x.FilterState.GetStringMatch(), r.principal)
	case *rbac.Principal_DirectRemoteIp:
		return cidrMatches(t, cidrOf{x.DirectRemoteIp.GetAddressPrefix(), x.DirectRemoteIp.GetPrefixLen().GetValue()}, r.sourceIP)
	case *rbac.Principal_RemoteIp:
		return cidrMatches(t, cidrOf{x.RemoteIp.GetAddressPrefix(), x.RemoteIp.GetPrefixLen().GetValue()}, r.remoteIP)
	case *rbac.Principal_SourceIp:
		return cidrMatches(t, cidrOf{x.SourceIp.GetAddressPrefix(), x.SourceIp.GetPrefixLen().GetValue()}, r.sourceIP)
	case *rbac.Principal_Header:
		return headerMatches(t, x.Header, r)
	case *rbac.Principal_Metadata:
		return metadataMatches(t, x.Metadata, r)
	}
	t.Fatalf("principal %v not evaluated here", p)
	return false
}

// metadataMatches evaluates a dynamic-metadata matcher on the JWT payload (jwt_authn filter).
func metadataMatches(t *testing.T, m *matcher.MetadataMatcher, r request) bool {
	t.Helper()
	var keys []string
	for _, p := range m.GetPath() {
		keys = append(keys, p.GetKey())
	}
	if m.GetFilter() != "envoy.filters.http.jwt_authn" || len(keys) < 2 || keys[0] != "payload" {
		t.Fatalf("metadata matcher %v not evaluated here", m)
	}
	var value any
	if r.jwt != nil {
		value = r.jwt[strings.Join(keys[1:], ".")]
	}
	return valueMatches(t, m.GetValue(), value) != m.GetInvert()
}

func valueMatches(t *testing.T, vm *matcher.ValueMatcher, value any) bool {
	t.Helper()
	switch v := vm.GetMatchPattern().(type) {
	case *matcher.ValueMatcher_StringMatch:
		s, ok := value.(string)
		return ok && stringMatches(t, v.StringMatch, s)
	case *matcher.ValueMatcher_ListMatch:
		list, _ := value.([]string)
		for _, s := range list {
			if valueMatches(t, v.ListMatch.GetOneOf(), s) {
				return true
			}
		}
		return false
	case *matcher.ValueMatcher_OrMatch:
		for _, x := range v.OrMatch.GetValueMatchers() {
			if valueMatches(t, x, value) {
				return true
			}
		}
		return false
	case *matcher.ValueMatcher_PresentMatch:
		return (value != nil) == v.PresentMatch
	case *matcher.ValueMatcher_NullMatch_:
		return value == nil
	}
	t.Fatalf("metadata value matcher %v not evaluated here", vm)
	return false
}

type prefixLen uint32

func (p prefixLen) GetValue() uint32 { return uint32(p) }

type cidrOf struct {
	prefix string
	len    uint32
}

func (c cidrOf) GetAddressPrefix() string                     { return c.prefix }
func (c cidrOf) GetPrefixLen() interface{ GetValue() uint32 } { return prefixLen(c.len) }
