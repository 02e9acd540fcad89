package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"istio.io/istio/pilot/test/xdstest"
)

type validator interface{ Validate() error }

// validateAny checks a typed config against Envoy's proto constraints (the PGV rules Envoy
// enforces when it loads the message); Validate on a listener does not look inside Any fields.
func validateAny(t *testing.T, where string, a *anypb.Any) {
	t.Helper()
	if a == nil {
		return
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		t.Errorf("%s: %s does not decode: %v", where, a.GetTypeUrl(), err)
		return
	}
	if v, ok := m.(validator); ok {
		if err := v.Validate(); err != nil {
			t.Errorf("%s: %s is invalid: %v", where, a.GetTypeUrl(), err)
		}
	}
}

func validateVirtualHosts(t *testing.T, where string, vhs []*route.VirtualHost) {
	for _, vh := range vhs {
		for name, a := range vh.GetTypedPerFilterConfig() {
			validateAny(t, where+" virtual host "+vh.Name+" "+name, a)
		}
		for _, r := range vh.GetRoutes() {
			for name, a := range r.GetTypedPerFilterConfig() {
				validateAny(t, where+" route "+r.Name+" "+name, a)
			}
		}
	}
}

// Envoy rejects a whole listener, cluster or route configuration that breaks its API constraints
// (and istiod drops EnvoyFilter patches it cannot apply): every proxy of every scenario gets
// configuration that passes pilot's own xDS validation (xdstest, as pilot's simulation tests run
// it) and whose HTTP filters and per-route filter configs satisfy Envoy's proto rules.
func TestEnvoyAcceptsEveryProxysConfig(t *testing.T) {
	root := os.Getenv("GITMESH_SIM_DIR")
	if root == "" {
		t.Fatal("GITMESH_SIM_DIR is not set: run  npx vitest run test/simulation")
	}
	specs, err := filepath.Glob(filepath.Join(root, "*", "*", "cluster.json"))
	if err != nil || len(specs) == 0 {
		t.Fatalf("no scenarios under %s (%v)", root, err)
	}
	for _, spec := range specs {
		dir := filepath.Dir(spec)
		caseName, clusterName := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		t.Run(caseName+"/"+clusterName, func(t *testing.T) {
			sc := load(t, caseName, clusterName)
			for _, p := range sc.spec.Proxies {
				x := sc.xds(strings.TrimSuffix(p.Name, "-0"))
				xdstest.ValidateListeners(t, x.sim.Listeners)
				xdstest.ValidateClusters(t, x.sim.Clusters)
				xdstest.ValidateRouteConfigurations(t, x.sim.Routes)
				for _, l := range x.sim.Listeners {
					for _, fc := range append(l.GetFilterChains(), l.GetDefaultFilterChain()) {
						if fc == nil {
							continue
						}
						h := xdstest.ExtractHTTPConnectionManager(t, fc)
						if h == nil {
							continue
						}
						where := p.Name + " listener " + l.Name + " chain " + fc.GetName()
						for _, f := range h.HttpFilters {
							validateAny(t, where+" filter "+f.Name, f.GetTypedConfig())
						}
						validateVirtualHosts(t, where, h.GetRouteConfig().GetVirtualHosts())
					}
				}
				for _, rc := range x.sim.Routes {
					validateVirtualHosts(t, p.Name+" route config "+rc.Name, rc.GetVirtualHosts())
				}
			}
		})
	}
}
