package kubeapi

import (
	"fmt"
	"os"
	"path/filepath"
)

// DRADriverImage is the NVIDIA DRA driver's one image as its chart renders it (templates/
// _helpers.tpl fullimage: values.yaml image.repository, then v<appVersion>): its controller,
// kubelet plugin and ComputeDomain daemons all run it.
const DRADriverImage = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:" + DRADriverVersion

// DRADriverTemplates are the templates of what the ComputeDomain controller makes (its DaemonSets
// and ResourceClaimTemplates), which its image copies from the module's templates/ to
// DRADriverTemplatesPath (deployments/container/Dockerfile), where the controller reads them at
// fixed paths (cmd/compute-domain-controller/daemonset.go, resourceclaimtemplate.go).
func DRADriverTemplates() (string, error) {
	mod, err := ModuleDir(DRADriverModule)
	if err != nil {
		return "", err
	}
	return filepath.Join(mod, "templates"), nil
}

// DRADriverTemplatesPath is where the DRA driver's image holds DRADriverTemplates.
const DRADriverTemplatesPath = "/templates"

// StartComputeDomainController runs the NVIDIA DRA driver's ComputeDomain controller of the
// release whose CRDs the server installs, as its chart runs it (one replica, no leader election,
// the chart's environment), with the admin's credentials, in namespace (which must exist: the
// controller keeps its DaemonSets and claim templates for the domains' daemons there). It runs
// chrooted into a directory that holds its binary, DRADriverTemplates where its image has them,
// and its kubeconfig, which needs root.
func (s *Server) StartComputeDomainController(namespace string) (stop func(), err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the ComputeDomain controller reads its templates at /templates and runs chrooted to find them there, which needs root: run the tests as root (the CI machine does)")
	}
	bin, err := binary(ComputeDomainControllerBuild)
	if err != nil {
		return nil, err
	}
	dir, err := DRADriverTemplates()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(s.dir, "compute-domain-controller-root")
	if err := os.MkdirAll(filepath.Join(root, DRADriverTemplatesPath), 0o755); err != nil {
		return nil, err
	}
	templates, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(templates) == 0 {
		return nil, fmt.Errorf("no templates in %s: %v", dir, err)
	}
	copies := map[string]string{bin: "compute-domain-controller"}
	for _, f := range templates {
		copies[f] = filepath.Join(DRADriverTemplatesPath, filepath.Base(f))
	}
	kubeconfig, err := s.kubeconfig()
	if err != nil {
		return nil, err
	}
	copies[kubeconfig] = "kubeconfig"
	for from, to := range copies {
		data, err := os.ReadFile(from)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(root, to), data, 0o755); err != nil {
			return nil, err
		}
	}
	// The chart's controller.yaml environment (v0.4.1), but for the metrics endpoint: test
	// processes run side by side on one network, and nothing here scrapes it.
	env := []string{"KUBECONFIG=/kubeconfig", "POD_NAME=compute-domain-controller", "NAMESPACE=" + namespace,
		"IMAGE_NAME=" + DRADriverImage, "LOG_VERBOSITY_CD_DAEMON=4", "LEADER_ELECTION_ENABLED=false", "HTTP_ENDPOINT="}
	p, err := s.startEnv("compute-domain-controller", "nsenter", env, "--root="+root, "--wd=/", "/compute-domain-controller", "-v", "4")
	if err != nil {
		return nil, err
	}
	return func() { s.stopProcess(p) }, nil
}
