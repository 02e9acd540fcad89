package sim

import (
	"testing"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	csrf "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/csrf/v3"
	extauthz "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	jwt "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	ratelimit "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pilot/pkg/simulation"
)

// beforeRouter asserts that the connection manager runs filter `name` before the router and
// returns it, unmarshalled into msg.
func beforeRouter(t *testing.T, h *hcm.HttpConnectionManager, name string, msg proto.Message) *hcm.HttpFilter {
	t.Helper()
	names := httpFilterNames(h)
	i, router := indexOf(names, name), indexOf(names, "envoy.filters.http.router")
	if i < 0 || i > router {
		t.Fatalf("HTTP filters %v: want %s before envoy.filters.http.router", names, name)
	}
	f := h.HttpFilters[i]
	if err := f.GetTypedConfig().UnmarshalTo(msg); err != nil {
		t.Fatal(err)
	}
	return f
}

// perRoute unmarshals a route's per-filter config for `name` into msg; false when there is none.
func perRoute(t *testing.T, r *route.Route, name string, msg proto.Message) bool {
	t.Helper()
	a := r.GetTypedPerFilterConfig()[name]
	if a == nil {
		return false
	}
	if err := a.UnmarshalTo(msg); err != nil {
		t.Fatal(err)
	}
	return true
}

// Gloo: an ExtAuthPolicy sends the requests of the routes it selects to its ExtAuthServer before
// they are forwarded; routes it does not select are not checked. ExtAuthServer `requestTimeout`,
// `requestBody`, `statusOnError` are the ext_authz filter's settings. Envoy: a filter marked
// `disabled` runs only on routes whose per-filter config names it, and a gRPC service's cluster
// must exist on the proxy or the listener is rejected.
// Case test/fixtures/translate/ext-auth, cluster1 (gateway port 80 → 8080).
func TestExtAuthPolicy(t *testing.T) {
	sc := load(t, "ext-auth", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	const grpcServer = "envoy.filters.http.ext_authz.gloo-ext-auth.bookinfo-frontends"
	const httpServer = "envoy.filters.http.ext_authz.http-authz.bookinfo-frontends"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	check(t, "the gateway's connection manager runs the ext_authz filter off by default", func(t *testing.T) {
		cfg := &extauthz.ExtAuthz{}
		f := beforeRouter(t, h, grpcServer, cfg)
		if !f.Disabled {
			t.Errorf("filter %s is enabled for every route of the gateway", grpcServer)
		}
		if cfg.GetGrpcService().GetTimeout().AsDuration().Seconds() != 1 || cfg.GetStatusOnError().GetCode() != 503 || cfg.GetWithRequestBody().GetMaxRequestBytes() != 8192 {
			t.Errorf("ext_authz settings %v, want the ExtAuthServer's 1s timeout, status 503 on error, 8192-byte bodies", cfg)
		}
		gw.cluster(cfg.GetGrpcService().GetEnvoyGrpc().GetClusterName())
	})
	check(t, "the selected route enables it with its config id", func(t *testing.T) {
		per := &extauthz.ExtAuthzPerRoute{}
		if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/login"))), grpcServer, per) {
			t.Fatalf("route /login has no per-route config for %s", grpcServer)
		}
		if per.GetDisabled() || per.GetCheckSettings().GetContextExtensions()["config_id"] == "" {
			t.Errorf("route /login ext_authz per-route %v", per)
		}
	})
	check(t, "the custom-auth route enables the HTTP server with its context extensions", func(t *testing.T) {
		cfg := &extauthz.ExtAuthz{}
		beforeRouter(t, h, httpServer, cfg)
		gw.cluster(cfg.GetHttpService().GetServerUri().GetCluster())
		per := &extauthz.ExtAuthzPerRoute{}
		if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/api/products"))), httpServer, per) || per.GetCheckSettings().GetContextExtensions()["team"] != "bookinfo" {
			t.Errorf("route /api: per-route %v, want %s with context extension team=bookinfo", per, httpServer)
		}
	})
	check(t, "a route no policy selects is not checked", func(t *testing.T) {
		r := gw.routeOf(gw.call(httpGateway(host, 8080, "/")))
		for _, name := range []string{grpcServer, httpServer} {
			if r.GetTypedPerFilterConfig()[name] != nil {
				t.Errorf("route %s enables %s", r.Name, name)
			}
		}
	})
}

// Gloo: a RateLimitPolicy sends the selected routes' descriptors (the client config's `actions`)
// to the rate-limit server of its RateLimitServerSettings (`requestTimeout`, `denyOnFail`); the
// RateLimitServerConfig names the descriptor domain. Envoy: the ratelimit filter only calls the
// server for routes with rate_limits actions.
// Case test/fixtures/translate/rate-limit, cluster1.
func TestRateLimitPolicy(t *testing.T) {
	sc := load(t, "rate-limit", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	check(t, "the gateway runs the ratelimit filter with the server settings", func(t *testing.T) {
		cfg := &ratelimit.RateLimit{}
		beforeRouter(t, h, "envoy.filters.http.ratelimit.limits.gloo-mesh-addons", cfg)
		if cfg.Domain == "" || !cfg.FailureModeDeny || cfg.GetTimeout().AsDuration().Milliseconds() != 200 {
			t.Errorf("ratelimit %v: want a domain, failure_mode_deny (denyOnFail) and a 200ms timeout", cfg)
		}
		gw.cluster(cfg.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName())
	})
	check(t, "the selected route carries the client config's actions", func(t *testing.T) {
		r := gw.routeOf(gw.call(httpGateway(host, 8080, "/api/x")))
		rl := r.GetRoute().GetRateLimits()
		// The third descriptor is the client config's setActions, led by its marker entry (gitmesh-set).
		if len(rl) != 3 || rl[0].Actions[0].GetGenericKey().GetDescriptorValue() != "counter" || rl[0].Actions[1].GetRemoteAddress() == nil || rl[1].Actions[0].GetRequestHeaders().GetHeaderName() != "x-user" ||
			rl[2].Actions[0].GetGenericKey().GetDescriptorKey() != "gitmesh-set" || rl[2].Actions[1].GetGenericKey().GetDescriptorValue() != "tier" {
			t.Errorf("route /api rate limits %v", rl)
		}
	})
	check(t, "a route no policy selects sends no descriptors", func(t *testing.T) {
		r := gw.routeOf(gw.call(httpGateway(host, 8080, "/")))
		if len(r.GetRoute().GetRateLimits()) != 0 {
			t.Errorf("route %s rate limits %v", r.Name, r.GetRoute().GetRateLimits())
		}
	})
}

// Gloo: a CSRFPolicy checks the Origin of the selected routes' requests (`filterEnabled`, or
// `shadowEnabled` to only record, for `percentage` of requests; `additionalOrigins` are accepted
// besides the destination's own). Routes it does not select are not checked.
// Case test/fixtures/translate/csrf-policy, cluster1.
func TestCSRFPolicy(t *testing.T) {
	sc := load(t, "csrf-policy", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	check(t, "the gateway runs the csrf filter, enforcing nothing by default", func(t *testing.T) {
		cfg := &csrf.CsrfPolicy{}
		beforeRouter(t, h, "envoy.filters.http.csrf", cfg)
		if percentOf(cfg.GetFilterEnabled().GetDefaultValue()) != 0 || percentOf(cfg.GetShadowEnabled().GetDefaultValue()) != 0 {
			t.Errorf("listener-level csrf %v: want it off outside the selected routes", cfg)
		}
	})
	check(t, "the enforced route checks 50% with the additional origins", func(t *testing.T) {
		per := &csrf.CsrfPolicy{}
		if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/forms/a"))), "envoy.filters.http.csrf", per) {
			t.Fatal("route /forms has no csrf config")
		}
		if percentOf(per.GetFilterEnabled().GetDefaultValue()) != 50 || len(per.AdditionalOrigins) != 4 || per.AdditionalOrigins[1].GetSuffix() != ".example.org" || !per.AdditionalOrigins[1].IgnoreCase ||
			per.AdditionalOrigins[2].GetPrefix() != "https://partner." || per.AdditionalOrigins[3].GetSafeRegex().GetRegex() != `https://[a-z]+\.example\.net` {
			t.Errorf("route /forms csrf %v", per)
		}
	})
	check(t, "the shadow route records 12.5% and enforces nothing", func(t *testing.T) {
		per := &csrf.CsrfPolicy{}
		if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/preview/a"))), "envoy.filters.http.csrf", per) {
			t.Fatal("route /preview has no csrf config")
		}
		if percentOf(per.GetShadowEnabled().GetDefaultValue()) != 12.5 || percentOf(per.GetFilterEnabled().GetDefaultValue()) != 0 {
			t.Errorf("route /preview csrf %v", per)
		}
	})
	check(t, "a route no policy selects is not checked", func(t *testing.T) {
		if perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/"))), "envoy.filters.http.csrf", &csrf.CsrfPolicy{}) {
			t.Error("the public route has csrf config")
		}
	})
}

// Gloo: a JWTPolicy validates tokens of its providers (`issuer`, `audiences`, `remote.url`,
// `tokenSource.headers`, `claimsToHeaders`) on the selected routes and refuses requests without a
// valid token, or whose `claims` / `requiredScopes` do not match; with `validationPolicy:
// ALLOW_MISSING` a request without a token passes. Istio: RequestAuthentication puts the
// jwt_authn filter on the workload, and the AuthorizationPolicy built from the requirements is an
// RBAC filter after it.
// Case test/fixtures/translate/jwt-policy, cluster1.
func TestJWTPolicy(t *testing.T) {
	sc := load(t, "jwt-policy", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	check(t, "the gateway validates the provider's tokens before authorization", func(t *testing.T) {
		cfg := &jwt.JwtAuthentication{}
		beforeRouter(t, h, "envoy.filters.http.jwt_authn", cfg)
		names := httpFilterNames(h)
		if indexOf(names, "envoy.filters.http.jwt_authn") > indexOf(names, "envoy.filters.http.rbac") {
			t.Errorf("HTTP filters %v: jwt_authn must run before rbac", names)
		}
		var p *jwt.JwtProvider
		for _, v := range cfg.Providers {
			if v.Issuer == "https://keycloak.example.com/realms/workshop" {
				p = v
			}
		}
		if p == nil {
			t.Fatalf("no provider for the keycloak issuer in %v", cfg.Providers)
		}
		if len(p.Audiences) != 1 || p.Audiences[0] != "bookinfo" || len(p.ClaimToHeaders) != 1 || p.ClaimToHeaders[0].HeaderName != "x-email" {
			t.Errorf("provider %v: want audience bookinfo and claim email → x-email", p)
		}
		if len(p.FromHeaders) != 1 || p.FromHeaders[0].Name != "Authorization" || p.FromHeaders[0].ValuePrefix != "Bearer " {
			t.Errorf("provider token source %v", p.FromHeaders)
		}
	})
	rules := rbacFilter(t, h)
	if rules == nil {
		t.Fatal("the gateway has no RBAC filter for the JWT requirements")
	}
	const iss = "https://keycloak.example.com/realms/workshop"
	token := func(claims map[string]any) map[string]any {
		out := map[string]any{"iss": iss, "sub": "alice", "aud": "bookinfo"}
		for k, v := range claims {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		req  request
		want bool
	}{
		{"refuses a selected route without a token", request{host: host, port: 8080, method: "POST", path: "/api/v1/orders"}, false},
		{"admits a selected route with a token whose claims match", request{host: host, port: 8080, method: "POST", path: "/api/v1/orders", jwt: token(map[string]any{"group": []string{"admins"}, "scope": []string{"openid"}})}, true},
		{"refuses a token outside the allowed groups", request{host: host, port: 8080, method: "GET", path: "/login", jwt: token(map[string]any{"group": []string{"guests"}, "scope": []string{"openid"}})}, false},
		{"refuses a token with a notValues claim", request{host: host, port: 8080, method: "GET", path: "/login", jwt: token(map[string]any{"group": []string{"admins"}, "scope": []string{"openid"}, "realm.role": "banned"})}, false},
		{"refuses a token without the required scope", request{host: host, port: 8080, method: "GET", path: "/login", jwt: token(map[string]any{"group": []string{"team-ops"}})}, false},
		{"admits a *-ops group", request{host: host, port: 8080, method: "GET", path: "/login", jwt: token(map[string]any{"group": []string{"team-ops"}, "scope": []string{"openid"}})}, true},
		{"refuses the selected regex route (/reports/[0-9]+) without a token", request{host: host, port: 8080, method: "GET", path: "/reports/7"}, false},
		{"admits the public route, which no policy selects, without a token", request{host: host, port: 8080, method: "GET", path: "/products"}, true},
	} {
		check(t, tc.name, func(t *testing.T) {
			if got := allowed(t, rules, tc.req); got != tc.want {
				t.Errorf("allowed(%+v) = %v, want %v", tc.req, got, tc.want)
			}
		})
	}

	check(t, "ALLOW_MISSING on a destination: its sidecar validates tokens and admits requests without one", func(t *testing.T) {
		x := sc.xds("reviews-v1")
		ih := x.hcmOf(simulation.Call{Address: x.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound})
		cfg := &jwt.JwtAuthentication{}
		beforeRouter(t, ih, "envoy.filters.http.jwt_authn", cfg)
		found := false
		for _, p := range cfg.Providers {
			if p.Issuer == "https://issuer.example.com" {
				found = true
				if !p.Forward {
					t.Errorf("keepToken: provider %v does not forward the token", p)
				}
			}
		}
		if !found {
			t.Errorf("no provider for https://issuer.example.com in %v", cfg.Providers)
		}
		if r := rbacFilter(t, ih); r != nil && !allowed(t, r, request{host: "reviews", method: "GET", path: "/", sourceIP: "10.244.0.9", remoteIP: "10.244.0.9", principal: "spiffe://cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage"}) {
			t.Errorf("a request without a token is refused on reviews")
		}
	})
}

// Gloo: an ExtAuthPolicy or RateLimitPolicy with `applyToDestinations` acts on the requests the
// selected destination receives, on its own sidecar; other workloads are untouched. Envoy: the
// inbound chain's connection manager gets the filters, and the inbound route configuration of
// the port enables ext_authz and carries the rate-limit descriptors.
// Case test/fixtures/simulation/sidecar-filters, cluster1: both select `details` (port 9080).
func TestSidecarInboundFilters(t *testing.T) {
	sc := load(t, "sidecar-filters", "cluster1")
	const authz = "envoy.filters.http.ext_authz.http-authz.bookinfo-backends"
	const rl = "envoy.filters.http.ratelimit.limits.gloo-mesh-addons"
	inbound := func(x *xdsOf) *hcm.HttpConnectionManager {
		return x.hcmOf(simulation.Call{Address: x.proxy.IPAddresses[0], Port: 9080, Protocol: simulation.HTTP, TLS: simulation.MTLS, CallMode: simulation.CallModeInbound})
	}
	details := sc.xds("details-v1")
	h := inbound(details)
	vhosts := h.GetRouteConfig().GetVirtualHosts()

	check(t, "the destination's inbound chain runs ext_authz and ratelimit before the router", func(t *testing.T) {
		a := &extauthz.ExtAuthz{}
		beforeRouter(t, h, authz, a)
		details.cluster(a.GetHttpService().GetServerUri().GetCluster())
		r := &ratelimit.RateLimit{}
		beforeRouter(t, h, rl, r)
		details.cluster(r.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName())
	})
	// Gloo: a RateLimitPolicy runs in its phase, postAuthz by default: after external auth, so
	// requests that authorization refuses are not counted against the limit.
	check(t, "ext_authz runs before ratelimit (Gloo's postAuthz phase)", func(t *testing.T) {
		names := httpFilterNames(h)
		if a, r := indexOf(names, authz), indexOf(names, rl); a < 0 || r < 0 || a > r {
			t.Errorf("inbound HTTP filters %v, want %s before %s", names, authz, rl)
		}
	})
	check(t, "the inbound route configuration enables ext_authz for the destination's requests", func(t *testing.T) {
		if len(vhosts) == 0 {
			t.Fatalf("inbound chain has no inline route configuration (rds %q)", h.GetRds().GetRouteConfigName())
		}
		for _, vh := range vhosts {
			if vh.GetTypedPerFilterConfig()[authz] == nil {
				t.Errorf("inbound virtual host %s does not enable %s", vh.Name, authz)
			}
		}
	})
	check(t, "the inbound route configuration sends the POST descriptor", func(t *testing.T) {
		for _, vh := range vhosts {
			limits := vh.GetRateLimits()
			if len(limits) != 1 || limits[0].Actions[0].GetHeaderValueMatch().GetDescriptorValue() != "details-writes" {
				t.Errorf("inbound virtual host %s rate limits %v", vh.Name, limits)
			}
		}
	})
	check(t, "another workload's inbound chain has neither", func(t *testing.T) {
		names := httpFilterNames(inbound(sc.xds("reviews-v1")))
		if indexOf(names, authz) >= 0 || indexOf(names, rl) >= 0 {
			t.Errorf("reviews inbound HTTP filters %v", names)
		}
	})
}
