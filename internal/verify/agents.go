package verify

import (
	"github.com/gpucluster/gpucluster/components/deviceplugin"
	"github.com/gpucluster/gpucluster/components/fabricmanager"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// agent is a node agent every node of a pool must run a Ready pod of: its DaemonSet's name,
// which is its pods' app.kubernetes.io/name label, the resource it advertises or whether it lifts
// the startup taint, and what the node lacks without it.
type agent struct {
	name       string
	advertises string
	liftsTaint bool
	without    string
}

// agents are the node agents the pool's spec deploys on its nodes.
func agents(p topology.PoolSpec) []agent {
	var out []agent
	ic := p.InCluster
	if ic.NVIDIADevicePlugin.Deploy {
		out = append(out, agent{name: deviceplugin.NVIDIAName, advertises: topology.ResourceGPU, without: "the node advertises no " + topology.ResourceGPU})
	}
	if ic.EFADevicePlugin.Deploy {
		out = append(out, agent{name: deviceplugin.EFAName, advertises: topology.ResourceEFA, without: "the node advertises no " + topology.ResourceEFA + ", and EFA jobs stop at NCCL's start"})
	}
	if ic.FabricManager.Deploy {
		out = append(out, agent{name: fabricmanager.Name, without: "no fabric manager runs: the NVSwitch fabric stays down, CUDA fails, and the health gate never passes"})
	}
	if len(p.HealthGate.Checks) > 0 {
		out = append(out, agent{name: healthgate.GateName, liftsTaint: true, without: "nothing checks the node or lifts its health taint"})
	}
	if p.ReadsEFACounters() {
		out = append(out, agent{name: topology.EFACountersReader, without: "nobody answers the benchmark's requests for the node's EFA counters: bench report cannot say whether the run crossed EFA"})
	}
	if ic.DCGMExporter.Deploy {
		out = append(out, agent{name: topology.DCGMExporterName, without: "the node's GPUs export no metrics (" + topology.KeyObservability + ": " + topology.ObservabilityDCGMExporter + ")"})
	}
	return out
}

// PoolAgents are the names of the node agents every node of the pool must run a Ready pod of.
func PoolAgents(p topology.PoolSpec) []string {
	var out []string
	for _, a := range agents(p) {
		out = append(out, a.name)
	}
	return out
}

// AgentNames are every node agent verify looks for.
func AgentNames() []string {
	return []string{deviceplugin.NVIDIAName, deviceplugin.EFAName, fabricmanager.Name, healthgate.GateName, topology.EFACountersReader, topology.DCGMExporterName}
}
