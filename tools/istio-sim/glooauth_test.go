package sim

import (
	"testing"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthz "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	oauth2 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// Gloo (ExtAuthPolicy glooAuth oauth2.oidcAuthorizationCode): an unauthenticated request on a
// selected route is sent to the identity provider's authorization endpoint; the provider redirects
// back to appUrl + callbackPath, where the code is exchanged at the token endpoint with the client
// secret; logoutPath ends the session. Routes the policy does not select are not authenticated.
// Envoy's oauth2 filter does this when it is enabled on the route; a filter inserted `disabled`
// runs only where a route's typed_per_filter_config names it (route-based filter chain), and the
// token endpoint's cluster must exist on the proxy.
// Case test/fixtures/translate/ext-auth-glooauth, cluster1 (gateway port 80 → 8080).
func TestExtAuthGlooAuthOIDC(t *testing.T) {
	sc := load(t, "ext-auth-glooauth", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	const keycloak = "envoy.filters.http.oauth2.bookinfo-frontends.keycloak"
	const okta = "envoy.filters.http.oauth2.bookinfo-frontends.okta"
	const inMesh = "envoy.filters.http.oauth2.bookinfo-frontends.in-mesh"
	const oidcOpa = "envoy.filters.http.oauth2.bookinfo-frontends.oidc-opa"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	enabled := func(t *testing.T, path string) []string {
		t.Helper()
		r := gw.routeOf(gw.call(httpGateway(host, 8080, path)))
		var on []string
		for _, name := range []string{keycloak, okta, inMesh, oidcOpa} {
			a := r.GetTypedPerFilterConfig()[name]
			if a == nil {
				continue
			}
			fc := &route.FilterConfig{}
			if err := a.UnmarshalTo(fc); err != nil {
				t.Fatalf("route %s: %s per-route config: %v", r.Name, name, err)
			}
			if !fc.GetDisabled() {
				on = append(on, name)
			}
		}
		return on
	}

	check(t, "each OIDC policy's filter runs before the router, off by default, with the policy's login flow", func(t *testing.T) {
		cfg := &oauth2.OAuth2{}
		f := beforeRouter(t, h, keycloak, cfg)
		if !f.Disabled {
			t.Errorf("%s is enabled on every route of the gateway", keycloak)
		}
		c := cfg.GetConfig()
		if c.GetRedirectUri() != "https://bookinfo.example.com/app/callback" || c.GetRedirectPathMatcher().GetPath().GetExact() != "/app/callback" || c.GetSignoutPath().GetPath().GetExact() != "/app/logout" {
			t.Errorf("redirect %q, callback %v, signout %v: want appUrl + callbackPath, /app/callback, /app/logout", c.GetRedirectUri(), c.GetRedirectPathMatcher(), c.GetSignoutPath())
		}
		if c.GetCredentials().GetClientId() != "bookinfo" || c.GetCredentials().GetTokenSecret().GetSdsConfig() == nil || c.GetCredentials().GetHmacSecret().GetSdsConfig() == nil {
			t.Errorf("credentials %v: want client bookinfo and both secrets from SDS", c.GetCredentials())
		}
		scopes := c.GetAuthScopes()
		if len(scopes) != 2 || scopes[0] != "openid" || scopes[1] != "email" {
			t.Errorf("scopes %v, want openid (always requested, as by Gloo) and email", scopes)
		}
		gw.cluster(c.GetTokenEndpoint().GetCluster())
	})
	check(t, "the selected routes enable their own policy's filter only; other routes none", func(t *testing.T) {
		for path, want := range map[string]string{"/app/x": keycloak, "/app/callback": keycloak, "/shop": okta, "/portal": inMesh, "/reports": oidcOpa} {
			if on := enabled(t, path); len(on) != 1 || on[0] != want {
				t.Errorf("%s enables %v, want only %s", path, on, want)
			}
		}
		for _, path := range []string{"/", "/api", "/api/pets", "/status", "/other"} {
			if on := enabled(t, path); len(on) != 0 {
				t.Errorf("%s enables %v, want no OIDC filter", path, on)
			}
		}
	})
	check(t, "an https token endpoint is called over TLS with the provider's name, an in-mesh one on its Service", func(t *testing.T) {
		cfg := &oauth2.OAuth2{}
		beforeRouter(t, h, okta, cfg)
		c := gw.cluster(cfg.GetConfig().GetTokenEndpoint().GetCluster())
		ctx := &tlsv3.UpstreamTlsContext{}
		if c.GetTransportSocket() == nil || c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx) != nil || ctx.GetSni() != "dev-1.okta.com" {
			t.Errorf("cluster %s transport socket %v: want TLS with SNI dev-1.okta.com", c.Name, c.GetTransportSocket())
		}
		in := &oauth2.OAuth2{}
		beforeRouter(t, h, inMesh, in)
		if got := in.GetConfig().GetTokenEndpoint().GetCluster(); got != "outbound|8080||keycloak.keycloak.svc.cluster.local" {
			t.Errorf("in-mesh token endpoint cluster %s", got)
		}
	})
	check(t, "a chain Envoy cannot run still goes to Gloo's ext-auth-service with its config id", func(t *testing.T) {
		per := &extauthz.ExtAuthzPerRoute{}
		if !perRoute(t, gw.routeOf(gw.call(httpGateway(host, 8080, "/api"))), "envoy.filters.http.ext_authz.gloo-ext-auth.bookinfo-frontends", per) || per.GetCheckSettings().GetContextExtensions()["config_id"] != "bookinfo-frontends.apikeys" {
			t.Errorf("route /api ext_authz per-route %v, want config_id bookinfo-frontends.apikeys", per)
		}
	})
}

// Gloo (glooAuth opaAuth): the configuration's query is evaluated over its Rego modules for every
// request of a selected route, after the OIDC login of the chain when there is one ("State is
// shared between successful requests on the chain"; input.state.jwt is the token of the OIDC flow);
// a chain's configurations are ANDed. gitmesh: Envoy's ext_authz filter (gRPC) to the OPA-Envoy
// service, inserted disabled after the chain's oauth2 filter, enabled per route with the context
// extension gitmesh_policy that OPA-Envoy's decision path dispatches on.
// Case test/fixtures/translate/ext-auth-glooauth, cluster1: oidc-opa (/reports; default OPA-Envoy
// gloo-mesh-addons/opa-envoy:9191), opa-server (/status; opaServerAuth on the same OPA-Envoy) and
// opa-only (/api/pets; ExtAuthServer annotated with opa/opa-envoy-pets:9292).
func TestExtAuthGlooAuthOPA(t *testing.T) {
	sc := load(t, "ext-auth-glooauth", "cluster1")
	gw := sc.xds("istio-ingressgateway")
	const host = "bookinfo.example.com"
	const login = "envoy.filters.http.oauth2.bookinfo-frontends.oidc-opa"
	const opa = "envoy.filters.http.ext_authz.opa-envoy.opa-envoy.gloo-mesh-addons"
	const pets = "envoy.filters.http.ext_authz.opa-envoy.opa-envoy-pets.opa"
	h := gw.hcmOf(httpGateway(host, 8080, "/"))

	check(t, "each OPA-Envoy service has one ext_authz filter before the router, off by default, calling its gRPC cluster", func(t *testing.T) {
		for name, cluster := range map[string]string{opa: "outbound|9191||opa-envoy.gloo-mesh-addons.svc.cluster.local", pets: "outbound|9292||opa-envoy-pets.opa.svc.cluster.local"} {
			cfg := &extauthz.ExtAuthz{}
			f := beforeRouter(t, h, name, cfg)
			if !f.Disabled {
				t.Errorf("%s is enabled on every route of the gateway", name)
			}
			if got := cfg.GetGrpcService().GetEnvoyGrpc().GetClusterName(); got != cluster {
				t.Errorf("%s calls %q, want %s", name, got, cluster)
			}
			if cfg.GetFailureModeAllow() {
				t.Errorf("%s fails open", name)
			}
			gw.cluster(cluster)
		}
	})
	check(t, "the OIDC login runs before the OPA decision, as in Gloo's chain", func(t *testing.T) {
		names := httpFilterNames(h)
		if i, j := indexOf(names, login), indexOf(names, opa); i < 0 || j < 0 || i > j {
			t.Errorf("HTTP filters %v: want %s before %s", names, login, opa)
		}
	})
	check(t, "each selected route enables its chain's filters and names its policy; other routes none", func(t *testing.T) {
		want := map[string]map[string]string{
			"/reports":    {login: "", opa: "bookinfo-frontends.oidc-opa"},
			"/api/pets/1": {pets: "bookinfo-frontends.opa-only"},
			"/status/200": {opa: "bookinfo-frontends.opa-server"},
		}
		for path, filters := range want {
			r := gw.routeOf(gw.call(httpGateway(host, 8080, path)))
			for name, policy := range filters {
				if policy == "" {
					fc := &route.FilterConfig{}
					if !perRoute(t, r, name, fc) || fc.GetDisabled() {
						t.Errorf("%s (route %s) does not enable %s", path, r.Name, name)
					}
					continue
				}
				per := &extauthz.ExtAuthzPerRoute{}
				if !perRoute(t, r, name, per) || per.GetDisabled() || per.GetCheckSettings().GetContextExtensions()["gitmesh_policy"] != policy {
					t.Errorf("%s (route %s) %s per-route %v, want enabled with gitmesh_policy=%s", path, r.Name, name, per, policy)
				}
			}
			if n := len(r.GetTypedPerFilterConfig()); n != len(filters) {
				t.Errorf("%s (route %s) has %d per-filter configs, want %d", path, r.Name, n, len(filters))
			}
		}
		for _, path := range []string{"/", "/app/x", "/api"} {
			r := gw.routeOf(gw.call(httpGateway(host, 8080, path)))
			for _, name := range []string{opa, pets} {
				if perRoute(t, r, name, &extauthz.ExtAuthzPerRoute{}) {
					t.Errorf("%s (route %s) meets %s", path, r.Name, name)
				}
			}
		}
	})
}
