package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cors "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	fault "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

func percentOf(f *typev3.FractionalPercent) float64 {
	d := map[typev3.FractionalPercent_DenominatorType]float64{
		typev3.FractionalPercent_HUNDRED:      100,
		typev3.FractionalPercent_TEN_THOUSAND: 10_000,
		typev3.FractionalPercent_MILLION:      1_000_000,
	}[f.GetDenominator()]
	return float64(f.GetNumerator()) * 100 / d
}

func headerNames(list []*core.HeaderValueOption) []string {
	var out []string
	for _, h := range list {
		out = append(out, h.GetHeader().GetKey())
	}
	return out
}

// Case test/fixtures/translate/route-policies, cluster1. From the Gloo API reference:
// RetryTimeoutPolicy `requestTimeout` and `retries{attempts, perTryTimeout, retryOn,
// retryRemoteLocalities}` apply to the routes its `applyToRoutes` selects (route labels, or the
// labels of the route's table), FaultInjectionPolicy `delay{fixedDelay}` / `abort{httpStatus,
// percentage}` likewise, an empty `applyToRoutes` (CORSPolicy) means every route of the workspace,
// HeaderManipulationPolicy appends and removes request and response headers, MirrorPolicy sends a
// percentage of the traffic to a second destination. Istio: a route without `retries` keeps
// Istio's default retry policy (2 attempts) and no timeout.
func TestRoutePolicies(t *testing.T) {
	sc := load(t, "route-policies", "cluster1")
	x := sc.xds("productpage-v1")
	const reviewsHost = "reviews.bookinfo-backends.svc.cluster.local"
	v2 := x.routeOf(x.call(httpOut(reviewsHost, 9080, "/v2/reviews/1")))
	rest := x.routeOf(x.call(httpOut(reviewsHost, 9080, "/reviews/1")))
	ratings := x.routeOf(x.call(httpOut("ratings.bookinfo-backends.svc.cluster.local", 9080, "/ratings/1")))

	check(t, "request timeout on the selected route only", func(t *testing.T) {
		if got := v2.GetRoute().GetTimeout().AsDuration(); got != 5*time.Second {
			t.Errorf("route /v2 timeout = %v, want 5s", got)
		}
		if got := rest.GetRoute().GetTimeout().AsDuration(); got != 0 {
			t.Errorf("route without RetryTimeoutPolicy has timeout %v, want none (0)", got)
		}
	})
	check(t, "retries on the selected route: attempts, per-try timeout, retryOn, remote localities", func(t *testing.T) {
		rp := v2.GetRoute().GetRetryPolicy()
		if rp.GetNumRetries().GetValue() != 3 {
			t.Errorf("num_retries = %d, want 3", rp.GetNumRetries().GetValue())
		}
		if got := rp.GetPerTryTimeout().AsDuration(); got != 2*time.Second {
			t.Errorf("per_try_timeout = %v, want 2s", got)
		}
		on := strings.Split(rp.GetRetryOn(), ",")
		if !slices.Contains(on, "5xx") || !slices.Contains(on, "reset") {
			t.Errorf("retry_on = %q, want 5xx and reset", rp.GetRetryOn())
		}
		if rp.GetRetryPriority().GetName() != "envoy.retry_priorities.previous_priorities" {
			t.Errorf("retryRemoteLocalities: retry_priority = %q, want envoy.retry_priorities.previous_priorities", rp.GetRetryPriority().GetName())
		}
	})
	check(t, "a route the policy does not select keeps Istio's default retries", func(t *testing.T) {
		if n := rest.GetRoute().GetRetryPolicy().GetNumRetries().GetValue(); n != 2 {
			t.Errorf("num_retries = %d, want Istio's default 2", n)
		}
	})
	check(t, "fault injection on every route of the labelled table, not on others", func(t *testing.T) {
		for name, r := range map[string]*route.Route{"/v2": v2, "rest": rest} {
			a := r.GetTypedPerFilterConfig()["envoy.filters.http.fault"]
			if a == nil {
				t.Errorf("route %s of the reviews table has no fault filter config", name)
				continue
			}
			f := &fault.HTTPFault{}
			if err := a.UnmarshalTo(f); err != nil {
				t.Fatal(err)
			}
			if d := f.GetDelay().GetFixedDelay().AsDuration(); d != 2*time.Second {
				t.Errorf("route %s: delay %v, want 2s", name, d)
			}
			if f.GetAbort().GetHttpStatus() != 503 || percentOf(f.GetAbort().GetPercentage()) != 10 {
				t.Errorf("route %s: abort %v, want 503 for 10%%", name, f.GetAbort())
			}
		}
		if ratings.GetTypedPerFilterConfig()["envoy.filters.http.fault"] != nil {
			t.Errorf("the ratings route (another table) has fault injection")
		}
	})
	check(t, "header manipulation on the selected route", func(t *testing.T) {
		if got := headerNames(v2.RequestHeadersToAdd); !slices.Contains(got, "x-route") {
			t.Errorf("request headers to add %v, want x-route", got)
		}
		if !slices.Contains(v2.RequestHeadersToRemove, "x-internal") || !slices.Contains(v2.ResponseHeadersToRemove, "server") {
			t.Errorf("headers to remove: request %v response %v", v2.RequestHeadersToRemove, v2.ResponseHeadersToRemove)
		}
		if got := headerNames(v2.ResponseHeadersToAdd); !slices.Contains(got, "x-served-by") {
			t.Errorf("response headers to add %v, want x-served-by", got)
		}
		if slices.Contains(headerNames(rest.RequestHeadersToAdd), "x-route") {
			t.Errorf("the unselected route adds x-route")
		}
	})
	check(t, "mirror 12.5% to details on every route of the namespace", func(t *testing.T) {
		for name, r := range map[string]*route.Route{"/v2": v2, "rest": rest, "ratings": ratings} {
			m := r.GetRoute().GetRequestMirrorPolicies()
			if len(m) != 1 || m[0].Cluster != "outbound|9080||details.bookinfo-backends.svc.cluster.local" || percentOf(m[0].GetRuntimeFraction().GetDefaultValue()) != 12.5 {
				t.Errorf("route %s mirror policies %v", name, m)
			}
		}
	})
	check(t, "CORS without applyToRoutes on every route of the workspace", func(t *testing.T) {
		for name, r := range map[string]*route.Route{"/v2": v2, "rest": rest, "ratings": ratings} {
			a := r.GetTypedPerFilterConfig()["envoy.filters.http.cors"]
			if a == nil {
				t.Errorf("route %s has no CORS policy", name)
				continue
			}
			c := &cors.CorsPolicy{}
			if err := a.UnmarshalTo(c); err != nil {
				t.Fatal(err)
			}
			var origins []string
			for _, o := range c.AllowOriginStringMatch {
				origins = append(origins, o.GetExact()+o.GetPrefix())
			}
			if !slices.Equal(origins, []string{"https://bookinfo.example.com", "https://dev."}) || c.AllowMethods != "GET,POST" || !c.GetAllowCredentials().GetValue() {
				t.Errorf("route %s CORS %v", name, c)
			}
		}
	})
}
