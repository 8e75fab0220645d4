package topology

import (
	"fmt"
	"slices"
	"strings"
)

// checkPoolsAgainstStack refuses what a stack-wide setting makes impossible for a pool: an
// UltraServer pool on a Kubernetes version EKS does not run it on [eks-ultra], a GPU the default
// training image has no code for, and the default image (CUDA 13) on a custom image's older driver.
// The last two are refused only when the stack's benchmark jobs would run that image; without
// benchmarks gpucluster runs no image of its own there, and they are warnings about the
// exported training pod template, which names it.
func checkPoolsAgainstStack(spec *StackSpec, st Stack) error {
	var errs ConfigErrors
	imageProblem := func(i int, message, fix string) {
		e := ConfigError{File: st.File, Line: st.Pools[i].typeLine, Key: st.Pools[i].typeKey, Message: message, Fix: fix}
		if spec.Benchmarks.Enabled {
			e.Fix += ", or turn the stack's benchmarks off"
			errs = append(errs, e)
			return
		}
		e.Message = "the exported training pod template would not run: " + e.Message + "; nothing gpucluster deploys runs that image here (benchmarks are off)"
		spec.Warnings = append(spec.Warnings, e)
	}
	for i, p := range spec.Pools {
		if p.Instance.MultiNodeNVLink() {
			if m := versionPattern.FindStringSubmatch(spec.Cluster.KubernetesVersion); m != nil && atoi(m[1]) < MinUltraServerKubernetesMinor {
				errs = append(errs, ConfigError{File: st.File, Line: st.versionLine, Key: KeyKubernetesVersion,
					Message: fmt.Sprintf("pool %s (%s) needs Kubernetes 1.%d or newer: its NVLink domain needs the NVIDIA DRA driver, and the pinned one (0.4.1) runs from 1.%d (EKS user guide, \"Install the NVIDIA DRA driver\"); the stack asks for %s",
						p.Name, p.Instance.Name, MinUltraServerKubernetesMinor, MinUltraServerKubernetesMinor, spec.Cluster.KubernetesVersion),
					Fix: fmt.Sprintf("set %s to 1.%d or newer (default %s)", KeyKubernetesVersion, MinUltraServerKubernetesMinor, DefaultKubernetesVersion)})
			}
		}
		if spec.TrainingImage != DefaultTrainingImage {
			continue // the stack's own image: what it was built for is the stack's to know
		}
		if cc := p.Instance.ComputeCapability; !slices.Contains(DefaultImageComputeCapabilities, cc) {
			imageProblem(i, fmt.Sprintf("pool %s runs %s GPUs (compute capability %s), and the default training image carries code for %v only, with no PTX to compile from: NCCL and nccl-tests would find no kernel to run",
				p.Name, p.Instance.GPUModel, cc, DefaultImageComputeCapabilities),
				fmt.Sprintf("set %s to an image whose NCCL and nccl-tests are built for sm_%s", KeyTrainingImage, strings.ReplaceAll(cc, ".", "")))
		}
		if p.AMI.Family == AMICustom {
			if major := atoi(strings.SplitN(spec.NVIDIADriverVersion, ".", 2)[0]); major < minCUDA13Driver {
				imageProblem(i, fmt.Sprintf("pool %s's custom image has NVIDIA driver %s, and the default training image is built with CUDA 13, which needs driver %d or newer",
					p.Name, spec.NVIDIADriverVersion, minCUDA13Driver),
					fmt.Sprintf("set %s to an image built with the CUDA your driver runs, or move the custom image to driver %d+ (and %s with it)", KeyTrainingImage, minCUDA13Driver, KeyNVIDIADriverVersion))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
