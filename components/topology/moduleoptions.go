package topology

import (
	"fmt"
	"strings"
)

// GrdmaTopologyOverride is the nvidia module option that lets a pre-R595 driver export GPU memory
// to a PCIe NIC on a Grace platform whose GPU and NIC do not share an IOMMU group, as on
// p6e-gb200 (catalog GPUCPUCoherent). NVIDIA's AI Cluster Runtime sets it for GB200 on EKS and
// says why: "Before R595 — which includes 580.173.02 — the driver must be loaded with
// NVreg_GrdmaPciTopoCheckOverride=1. Without it the driver refuses to let a PCIe-attached NIC
// (EFA on EKS) attach dma-buf handles to GPU memory" (NVIDIA/aicr docs/user/validation.md). The
// EKS AL2023 NVIDIA image of the pinned release (580.159.03) does not set it: its
// templates/al2023/runtime/gpu/nvidia-kmod-load.sh writes only NVreg_CoherentGPUMemoryMode (and
// NVreg_EnableGpuFirmware on g4dn, g5, g5g). Without it aws-ofi-nccl turns GPUDirect RDMA off
// ("GDR disabled on GDR-supported instance type", src/platform-aws.cpp), and NCCL stages every
// inter-node transfer through host memory.
const GrdmaTopologyOverride = "NVreg_GrdmaPciTopoCheckOverride=1"

// NVIDIAModuleOptionsFile is where a node's user data writes the nvidia module's options, beside
// the image's own (/etc/modprobe.d/40-eks-nvidia-openrm.conf on the AL2023 NVIDIA image).
const NVIDIAModuleOptionsFile = "/etc/modprobe.d/50-gpucluster-nvidia.conf"

// grdmaOverrideLastBranch is the last driver branch the override acts in: from R595 the driver
// ignores it and requires the shared IOMMU group, which AICR measured p6e nodes do not have
// (NVIDIA/aicr PR #2439, citing the 595.91.07 release notes: R595 is "backward incompatible
// with P6e-GB200 EFA"; open-gpu-kernel-modules 595.45.04 nv-pci.c no longer reads the option).
const grdmaOverrideLastBranch = 594

// setNVIDIAModuleOptions gives an EFA pool on a Grace GPU the topology override its driver needs
// for GPUDirect RDMA over EFA through the node's user data. On the EKS image it also pins the
// node group to the release whose 580 driver the override is chosen for (NodeImageRelease):
// managed node groups otherwise take EKS's newest release when created, and when that moves to
// an R595 driver new nodes lose GPUDirect RDMA over EFA without a word. A custom image must state
// a driver before R595 (its nvidiaDriverVersion): from R595 the override no longer acts, and
// NVIDIA calls R595 "backward incompatible with P6e-GB200 EFA" (AICR PR #2439, citing the
// 595.91.07 release notes; it reproduced the NCCL abort), so such a pool is refused.
// (Bottlerocket and Karpenter, which would need another way in, are refused on these types:
// validateUltraServer.)
func setNVIDIAModuleOptions(p *PoolSpec, st Stack, pool Pool) error {
	if !p.Instance.GPUCPUCoherent || p.Network.EFAInterfaces == 0 {
		return nil
	}
	driver := st.DriverVersion
	if p.AMI.Family != AMICustom {
		driver = DefaultNVIDIADriverVersion
		p.AMI.NodeGroupReleaseVersion = NodeImageRelease(st.Cluster.KubernetesVersion)
		p.AMI.ReleaseVersionReason = fmt.Sprintf("the EKS image release %s, whose driver %s takes %s (GPUDirect RDMA over EFA on %s); a newer release may ship R595, which refuses it",
			AL2023Release, driver, GrdmaTopologyOverride, p.Instance.Name)
	}
	if branch := atoi(strings.SplitN(driver, ".", 2)[0]); branch > grdmaOverrideLastBranch {
		line := st.driverLine
		if line == 0 {
			line = pool.typeLine
		}
		return ConfigErrors{{File: st.File, Line: line, Key: KeyNVIDIADriverVersion,
			Message: fmt.Sprintf("pool %s: driver %s (R%d) breaks GPUDirect RDMA over EFA on %s: it ignores %s and needs the GPU and EFA in one IOMMU group, which p6e nodes do not have; NVIDIA calls R595 backward incompatible with P6e-GB200 EFA (595.91.07 release notes)",
				pool.Name, driver, branch, p.Instance.Name, GrdmaTopologyOverride),
			Fix: "build the custom image with a 580-branch driver and set nvidiaDriverVersion to it, or use amiFamily: al2023-nvidia (pinned to release " + AL2023Release + ", driver " + DefaultNVIDIADriverVersion + ")"}}
	}
	p.AMI.NVIDIAModuleOptions = []string{GrdmaTopologyOverride}
	p.AMI.ModuleOptionsReason = fmt.Sprintf("GPUDirect RDMA over EFA on %s with driver %s: the driver checks that EFA and the GPU share an IOMMU group, which they do not here; the override lets EFA map GPU memory (NVIDIA AICR; the EKS image does not set it)",
		p.Instance.Name, driver)
	return nil
}
