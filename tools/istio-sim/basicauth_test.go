package sim

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"
	"testing"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	basicauth "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	extauthz "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"istio.io/istio/pilot/pkg/simulation"
)

// envoyAdmits is Envoy's basic_auth check (basic_auth_filter.cc): the user's htpasswd line must
// be `user:{SHA}` + base64(SHA-1(password)); Envoy loads only `{SHA}` lines.
func envoyAdmits(t *testing.T, htpasswd, user, password string) bool {
	t.Helper()
	sum := sha1.Sum([]byte(password))
	want := "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
	for _, line := range strings.Split(htpasswd, "\n") {
		name, hash, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(hash, "{SHA}") {
			t.Errorf("htpasswd line %q is not user:{SHA}hash, which Envoy's basic_auth refuses to load", line)
			continue
		}
		if name == user {
			return hash == want
		}
	}
	return false
}

// Gloo (ExtAuthPolicy glooAuth basicAuth, extended configuration with `encryption: {sha1: {}}`):
// a request on a selected route is admitted when its Basic credentials name a listed user whose
// hashedPassword is hex(SHA-1(password + salt)); otherwise 401. Routes the policy does not select are
// not checked. With an empty salt Envoy's basic_auth filter does the same check when it is enabled
// on the route; a salted or APR1 configuration keeps going to Gloo's ext-auth-service.
// Case test/fixtures/translate/ext-auth-basic-auth, cluster1 (gateway port 80 → 8080; ratings 9080).
func TestExtAuthGlooAuthBasicAuth(t *testing.T) {
	sc := load(t, "ext-auth-basic-auth", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	const sha1Users = "envoy.filters.http.basic_auth.bookinfo-frontends.sha1-users"
	const ratings = "envoy.filters.http.basic_auth.bookinfo-backends.ratings-basic"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	enabled := func(t *testing.T, r *route.Route, name string) bool {
		t.Helper()
		fc := &route.FilterConfig{}
		return perRoute(t, r, name, fc) && !fc.GetDisabled()
	}

	check(t, "the policy's basic_auth filter runs before the router, off by default, with the users Gloo admits", func(t *testing.T) {
		cfg := &basicauth.BasicAuth{}
		f := beforeRouter(t, h, sha1Users, cfg)
		if !f.Disabled {
			t.Errorf("%s is enabled on every route of the gateway", sha1Users)
		}
		users := cfg.GetUsers().GetInlineString()
		// Gloo's stored hashes: user = SHA-1("password") (upper-case hex, which Gloo accepts), ops = SHA-1("opspass").
		for _, c := range []struct {
			user, password string
			want           bool
		}{{"user", "password", true}, {"ops", "opspass", true}, {"user", "opspass", false}, {"user", "Password", false}, {"broken", "not-a-digest", false}} {
			if got := envoyAdmits(t, users, c.user, c.password); got != c.want {
				t.Errorf("user %s password %q admitted %v, want %v (htpasswd %q)", c.user, c.password, got, c.want, users)
			}
		}
	})
	check(t, "only the selected route enables it; Gloo-only configurations still go to ext-auth-service", func(t *testing.T) {
		for path, want := range map[string]bool{"/admin": true, "/admin/users": true, "/": false, "/reports": false, "/legacy": false, "/api": false} {
			if got := enabled(t, gw.routeOf(gw.call(httpGateway(host, 8080, path))), sha1Users); got != want {
				t.Errorf("%s enables %s: %v, want %v", path, sha1Users, got, want)
			}
		}
		for path, id := range map[string]string{"/reports": "bookinfo-frontends.salted", "/legacy": "bookinfo-frontends.apr", "/api": "bookinfo-frontends.apikeys"} {
			per := &extauthz.ExtAuthzPerRoute{}
			if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, path))), "envoy.filters.http.ext_authz.gloo-ext-auth.bookinfo-frontends", per) || per.GetCheckSettings().GetContextExtensions()["config_id"] != id {
				t.Errorf("route %s ext_authz per-route %v, want config_id %s", path, per, id)
			}
		}
	})
	inbound := func(x *xdsOf) *hcm.HttpConnectionManager {
		return x.hcmOf(simulation.Call{Address: x.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound})
	}
	check(t, "a destination's policy: the filter on the selected sidecar's inbound port, enabled for its virtual host", func(t *testing.T) {
		r := sc.xds("ratings-v1")
		ih := inbound(r)
		cfg := &basicauth.BasicAuth{}
		beforeRouter(t, ih, ratings, cfg)
		if !envoyAdmits(t, cfg.GetUsers().GetInlineString(), "reviews", "password") {
			t.Errorf("ratings htpasswd %q does not admit reviews/password", cfg.GetUsers().GetInlineString())
		}
		vhs := ih.GetRouteConfig().GetVirtualHosts()
		if len(vhs) == 0 {
			t.Fatalf("inbound chain has no inline route configuration")
		}
		for _, vh := range vhs {
			fc := &route.FilterConfig{}
			a := vh.GetTypedPerFilterConfig()[ratings]
			if a == nil || a.UnmarshalTo(fc) != nil || fc.GetDisabled() {
				t.Errorf("inbound virtual host %s does not enable %s", vh.Name, ratings)
			}
		}
		if names := httpFilterNames(inbound(sc.xds("productpage-v1"))); indexOf(names, ratings) >= 0 {
			t.Errorf("productpage inbound HTTP filters %v include %s", names, ratings)
		}
	})
}
