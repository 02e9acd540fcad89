// Package sim runs pilot's own xDS simulation over gitmesh's rendered output.
//
// test/simulation/istio-sim.test.ts renders each scenario with gitmesh's translate and writes, per
// (case, cluster), a directory under $GITMESH_SIM_DIR:
//
//	istio.yaml    the cluster's rendered Istio resources
//	kube.yaml     Namespaces, Nodes, Services, Pods and EndpointSlices made from its discovery
//	cluster.json  cluster name, trust domain, root namespace and the proxies (pods) to simulate
//
// Each test loads one directory into xds.NewFakeDiscoveryServer (istiod's config and service
// registries, fed from those objects) and asks pilot what a named proxy receives: listeners,
// routes, clusters and endpoints, and where a request goes (pilot/pkg/simulation). The assertions
// are written from Gloo's and Istio's documentation, not from gitmesh's output.
package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/simulation"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pilot/test/xdstest"
	clusterid "istio.io/istio/pkg/cluster"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/test"
)

type proxySpec struct {
	Name           string            `json:"name"`
	Namespace      string            `json:"namespace"`
	Type           string            `json:"type"`
	IP             string            `json:"ip"`
	Labels         map[string]string `json:"labels"`
	ServiceAccount string            `json:"serviceAccount"`
	Locality       string            `json:"locality"`
}

type clusterSpec struct {
	Cluster       string      `json:"cluster"`
	TrustDomain   string      `json:"trustDomain"`
	RootNamespace string      `json:"rootNamespace"`
	Proxies       []proxySpec `json:"proxies"`
}

// scenario is one cluster of one rendered case, loaded into a fake istiod.
type scenario struct {
	t    *testing.T
	spec clusterSpec
	s    *xds.FakeDiscoveryServer
}

func load(t *testing.T, caseName, clusterName string) *scenario {
	t.Helper()
	root := os.Getenv("GITMESH_SIM_DIR")
	if root == "" {
		t.Fatal("GITMESH_SIM_DIR is not set: these tests run on scenarios rendered by gitmesh; run  npx vitest run test/simulation")
	}
	dir := filepath.Join(root, caseName, clusterName)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("scenario %s/%s: %v", caseName, clusterName, err)
		}
		return string(b)
	}
	var spec clusterSpec
	if err := json.Unmarshal([]byte(read("cluster.json")), &spec); err != nil {
		t.Fatalf("scenario %s/%s: cluster.json: %v", caseName, clusterName, err)
	}
	// Gloo's Istio installs run istiod with PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES=false (so do
	// gitmesh's example clusters, examples/discovery/*/istio-system.yaml): the WorkloadEntries a
	// VirtualDestination adds for remote clusters carry the backing pods' labels, and with Istio's
	// default (true) the local Kubernetes Service would select them too.
	test.SetForTest(t, &features.EnableK8SServiceSelectWorkloadEntries, false)
	m := mesh.DefaultMeshConfig()
	m.TrustDomain = spec.TrustDomain
	m.RootNamespace = spec.RootNamespace
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		ConfigString:           read("istio.yaml"),
		KubernetesObjectString: read("kube.yaml"),
		MeshConfig:             m,
		DefaultClusterName:     clusterid.ID(spec.Cluster),
	})
	return &scenario{t: t, spec: spec, s: s}
}

// proxy is the proxy of the pod whose name starts with prefix (a workload or gateway name).
func (sc *scenario) proxy(prefix string) *model.Proxy {
	sc.t.Helper()
	for _, p := range sc.spec.Proxies {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		typ := model.SidecarProxy
		if p.Type == "router" {
			typ = model.Router
		}
		labels := map[string]string{}
		for k, v := range p.Labels {
			labels[k] = v
		}
		px := &model.Proxy{
			Type:            typ,
			ID:              p.Name + "." + p.Namespace,
			IPAddresses:     []string{p.IP},
			ConfigNamespace: p.Namespace,
			Labels:          labels,
			Metadata: &model.NodeMetadata{
				Labels:       labels,
				Namespace:    p.Namespace,
				ClusterID:    clusterid.ID(sc.spec.Cluster),
				IstioVersion: "1.29.0",
			},
		}
		if p.Locality != "" {
			px.Locality = localityOf(p.Locality)
		}
		return sc.s.SetupProxy(px)
	}
	sc.t.Fatalf("no proxy %q in cluster %s", prefix, sc.spec.Cluster)
	return nil
}

func localityOf(s string) *core.Locality {
	parts := strings.SplitN(s, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return &core.Locality{Region: parts[0], Zone: parts[1], SubZone: parts[2]}
}

// xdsOf is what one proxy receives.
type xdsOf struct {
	sc        *scenario
	proxy     *model.Proxy
	sim       *simulation.Simulation
	endpoints []*endpoint.ClusterLoadAssignment
}

func (sc *scenario) xds(prefix string) *xdsOf {
	p := sc.proxy(prefix)
	return &xdsOf{sc: sc, proxy: p, sim: simulation.NewSimulation(sc.t, sc.s, p), endpoints: sc.s.Endpoints(p)}
}

// call runs a request through the proxy's listeners, filter chains and routes (pilot's simulation).
func (x *xdsOf) call(c simulation.Call) simulation.Result {
	return x.sim.Run(c)
}

// httpOut is a plaintext HTTP request a sidecar's application sends to host:port.
func httpOut(host string, port int, path string) simulation.Call {
	return simulation.Call{Port: port, Protocol: simulation.HTTP, HostHeader: host, Path: path, CallMode: simulation.CallModeOutbound}
}

// httpGateway is a plaintext HTTP request arriving at a gateway's container port.
func httpGateway(host string, port int, path string) simulation.Call {
	return simulation.Call{Port: port, Protocol: simulation.HTTP, HostHeader: host, Path: path, CallMode: simulation.CallModeGateway}
}

// routeOf is the Envoy route a simulated request matched.
func (x *xdsOf) routeOf(r simulation.Result) *route.Route {
	x.sc.t.Helper()
	if r.Error != nil {
		x.sc.t.Fatalf("request was not routed: %v", r.Error)
	}
	rc := xdstest.ExtractRouteConfigurations(x.sim.Routes)[r.RouteConfigMatched]
	for _, vh := range rc.GetVirtualHosts() {
		if vh.Name != r.VirtualHostMatched {
			continue
		}
		for _, rt := range vh.Routes {
			if rt.Name == r.RouteMatched {
				return rt
			}
		}
	}
	x.sc.t.Fatalf("route %q of virtual host %q not found in route config %q", r.RouteMatched, r.VirtualHostMatched, r.RouteConfigMatched)
	return nil
}

// virtualHostOf is the Envoy virtual host a simulated request matched.
func (x *xdsOf) virtualHostOf(r simulation.Result) *route.VirtualHost {
	x.sc.t.Helper()
	rc := xdstest.ExtractRouteConfigurations(x.sim.Routes)[r.RouteConfigMatched]
	for _, vh := range rc.GetVirtualHosts() {
		if vh.Name == r.VirtualHostMatched {
			return vh
		}
	}
	x.sc.t.Fatalf("virtual host %q not found in route config %q", r.VirtualHostMatched, r.RouteConfigMatched)
	return nil
}

func (x *xdsOf) cluster(name string) *cluster.Cluster {
	x.sc.t.Helper()
	c := xdstest.ExtractCluster(name, x.sim.Clusters)
	if c == nil {
		x.sc.t.Fatalf("proxy %s has no cluster %q; it has %v", x.proxy.ID, name, xdstest.MapKeys(xdstest.ExtractClusters(x.sim.Clusters)))
	}
	return c
}

func (x *xdsOf) loadAssignment(clusterName string) *endpoint.ClusterLoadAssignment {
	for _, cla := range x.endpoints {
		if cla.ClusterName == clusterName {
			return cla
		}
	}
	return nil
}

// endpointsByPriority maps "ip:port" of every endpoint of the cluster to its EDS priority.
func (x *xdsOf) endpointsByPriority(clusterName string) map[string]uint32 {
	out := map[string]uint32{}
	for _, l := range x.loadAssignment(clusterName).GetEndpoints() {
		for _, e := range l.LbEndpoints {
			a := e.GetEndpoint().GetAddress().GetSocketAddress()
			out[fmt.Sprintf("%s:%d", a.GetAddress(), a.GetPortValue())] = l.Priority
		}
	}
	return out
}

// hcmOf is the HTTP connection manager of the filter chain a simulated request matched.
func (x *xdsOf) hcmOf(c simulation.Call) *hcm.HttpConnectionManager {
	x.sc.t.Helper()
	var fc *listener.FilterChain
	c.CustomListenerValidations = append(c.CustomListenerValidations, func(f *listener.FilterChain) error {
		fc = f
		return nil
	})
	r := x.sim.Run(c)
	if fc == nil {
		x.sc.t.Fatalf("no filter chain matched %+v: %v", c, r.Error)
	}
	h := xdstest.ExtractHTTPConnectionManager(x.sc.t, fc)
	if h == nil {
		x.sc.t.Fatalf("filter chain %q has no HTTP connection manager", fc.Name)
	}
	return h
}

// httpFilterNames lists the HTTP filters of a connection manager, in order.
func httpFilterNames(h *hcm.HttpConnectionManager) []string {
	var out []string
	for _, f := range h.HttpFilters {
		out = append(out, f.Name)
	}
	return out
}

func httpFilter(h *hcm.HttpConnectionManager, name string) *hcm.HttpFilter {
	for _, f := range h.HttpFilters {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// check is one checked outcome, reported as its own subtest (the vitest side counts them).
func check(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, f)
}
