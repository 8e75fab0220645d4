package kubeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TrainerVersion and JobSetVersion are the releases whose CRDs the server installs and whose
// controllers StartTrainer and StartJobSet run (build/kube/go.mod pins both).
const (
	TrainerVersion = "v2.3.0"
	JobSetVersion  = "v0.12.0"
)

// KueueVersion is the Kueue release whose CRDs the server installs and whose manager StartKueue
// runs (build/kube/go.mod).
const KueueVersion = "v0.19.2"

// webhookController is a controller-runtime manager that serves admission webhooks: started
// with its release's own configuration file format, served on a free loopback port with this
// server's certificate, its release's webhook configurations registered to call it.
type webhookController struct {
	name, build, module string
	// manifest is the release's webhook configurations, in its module.
	manifest string
	// config is the manager's configuration file for a webhook port and certificate directory.
	config func(port int, certDir string) string
	// env runs the manager with variables of its own (where it has no setting for a path).
	env func(dir string) ([]string, error)
	// adjust adds to a webhook what the release's kustomize patches add.
	adjust func(hook map[string]any)
	// prepare, when set, runs before the manager starts, with the address it will serve on and
	// the serving certificate; the webhook configurations are then registered before it starts
	// too (a manager that injects its CA into them waits for them).
	prepare func(addr string, cert, key []byte) (undo func(), err error)
}

// startWebhookController runs one, with the admin's credentials (its chart grants it a
// ClusterRole; its permissions are not what these tests prove), no metrics, health or leader
// election ports (test processes run side by side), and registers its webhooks once it serves
// them. The returned stop removes the webhook configurations first: with failurePolicy Fail, a
// webhook whose server is gone would refuse every object it covers.
func (s *Server) startWebhookController(c webhookController) (stop func(), err error) {
	bin, err := binary(c.build)
	if err != nil {
		return nil, err
	}
	mod, err := ModuleDir(c.module)
	if err != nil {
		return nil, err
	}
	manifest, err := os.ReadFile(filepath.Join(mod, c.manifest))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := s.kubeconfig()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.dir, c.name)
	certDir := filepath.Join(dir, "certs")
	ca, err := s.webhookCertificate(certDir)
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(c.config(ports[0], certDir)), 0o600); err != nil {
		return nil, err
	}
	var env []string
	if c.env != nil {
		if env, err = c.env(dir); err != nil {
			return nil, err
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	hooks, err := webhookConfigurations(manifest, c.name, "https://"+addr, ca, c.adjust)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.name, c.manifest, err)
	}
	var created []map[string]any
	var p *process
	undo := func() {}
	stop = func() {
		for _, h := range created {
			s.Delete(h)
		}
		if p != nil {
			s.stopProcess(p)
		}
		undo()
	}
	register := func() error {
		for _, h := range hooks {
			if err := s.Create(h); err != nil {
				return err
			}
			created = append(created, h)
		}
		return nil
	}
	if c.prepare != nil {
		if undo, err = c.prepare(addr, s.webhookCert[0], s.webhookCert[1]); undo == nil {
			undo = func() {}
		}
		if err != nil {
			stop()
			return nil, err
		}
		if err := register(); err != nil {
			stop()
			return nil, err
		}
	}
	if p, err = s.startEnv(c.name, bin, env, "--kubeconfig="+kubeconfig, "--config="+configFile); err != nil {
		stop()
		return nil, err
	}
	if err := s.waitServing(p, addr, 90*time.Second); err != nil {
		stop()
		return nil, err
	}
	if c.prepare == nil {
		if err := register(); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

// StartTrainer runs Kubeflow Trainer's controller manager (the release whose CRDs the server
// serves): TrainJobs become JobSets through the ClusterTrainingRuntime they name, and its
// webhooks validate TrainJobs and runtimes as in a cluster (a TrainJob that sets PET_* is
// refused). Its certificate management is off: the harness gives it its certificate.
func (s *Server) StartTrainer() (stop func(), err error) {
	return s.startWebhookController(webhookController{
		name: "trainer-controller-manager", build: TrainerBuild, module: TrainerModule,
		manifest: "manifests/base/webhook/manifests.yaml",
		config: func(port int, _ string) string {
			return fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook: {port: %d, host: 127.0.0.1}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "0"}
leaderElection: {leaderElect: false}
certManagement: {enable: false}
`, port)
		},
		// The Trainer's configuration has no certificate directory: controller-runtime's
		// default is $TMPDIR/k8s-webhook-server/serving-certs.
		env: func(dir string) ([]string, error) {
			tmp := filepath.Join(dir, "tmp")
			_, err := s.webhookCertificate(filepath.Join(tmp, "k8s-webhook-server", "serving-certs"))
			return []string{"TMPDIR=" + tmp}, err
		},
	})
}

// StartJobSet runs the JobSet controller (the release whose CRD the server serves): JobSets
// get their Jobs and headless Service, and its webhooks default and validate JobSets and their
// pods, the pod webhooks only for pods of a JobSet, as the release's patches select them.
func (s *Server) StartJobSet() (stop func(), err error) {
	return s.startWebhookController(webhookController{
		name: "jobset-controller", build: JobSetBuild, module: JobSetModule,
		manifest: "config/components/webhook/manifests.yaml",
		config: func(port int, certDir string) string {
			return fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook: {port: %d, host: 127.0.0.1, certDir: %q}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "0"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
`, port, certDir)
		},
		// config/components/webhook/patches: the pod webhooks select the pods of a JobSet.
		adjust: func(hook map[string]any) {
			if hook["name"] == "mpod.kb.io" || hook["name"] == "vpod.kb.io" {
				hook["objectSelector"] = map[string]any{"matchExpressions": []any{
					map[string]any{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}}}
			}
		},
	})
}

// StartKueue runs Kueue's manager (the release whose CRDs the server serves) with the release's
// own configuration (config/components/manager: its integrations, waitForPodsReady and the rest
// at their defaults) and its own certificate management: its rotator finds the harness's
// certificate in its Secret, valid for its CA and webhook Service, keeps it, and injects it into
// the webhook configurations and the conversion webhooks of its CRDs, as in a cluster. Its
// webhooks suspend every job that names a queue; its scheduler admits each whole or not at all
// against the ClusterQueues' quota and, on flavors with a Topology, against the Node objects'
// topology labels, and unsuspends it. Only the ports differ (the harness's), and the visibility
// API server, which binds a fixed port, is off.
func (s *Server) StartKueue() (stop func(), err error) { return s.StartKueueWith(nil) }

// StartKueueWith starts Kueue with the release's configuration and overlay's top-level sections
// in place of the release's (gpucluster's resources section, say: components/kueue.Resources).
func (s *Server) StartKueueWith(overlay map[string]any) (stop func(), err error) {
	mod, err := ModuleDir(KueueModule)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(mod, "config", "components", "manager", "controller_manager_config.yaml"))
	if err != nil {
		return nil, err
	}
	release, err := yamlToObject(raw)
	if err != nil {
		return nil, err
	}
	return s.startWebhookController(webhookController{
		name: "kueue", build: KueueBuild, module: KueueModule,
		manifest: "config/components/webhook/manifests.yaml",
		config: func(port int, certDir string) string {
			cfg := maps.Clone(release)
			maps.Copy(cfg, overlay)
			cfg["webhook"] = map[string]any{"port": port, "host": "127.0.0.1", "certDir": certDir}
			cfg["metrics"] = map[string]any{"bindAddress": "0"}
			cfg["health"] = map[string]any{"healthProbeBindAddress": "0"}
			cfg["leaderElection"] = map[string]any{"leaderElect": false}
			cfg["featureGates"] = map[string]any{"VisibilityOnDemand": false}
			out, _ := json.Marshal(cfg) // JSON is YAML
			return string(out)
		},
		// config/components/webhook/kustomization.yaml: the jobs' and pods' webhooks skip
		// kube-system and Kueue's own namespace.
		adjust: func(hook map[string]any) {
			name, _ := hook["name"].(string)
			if kueueJobHooks[strings.TrimSuffix(name[min(1, len(name)):], ".kb.io")] {
				hook["namespaceSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
					"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system", kueueNamespace}}}}
			}
		},
		prepare: s.kueueCertificates,
	})
}

// Kueue's defaults (apis/config/v1beta2/defaults.go, pkg/util/cert): its namespace, webhook
// Service and Secret, the name its rotator gives its CA, and the CRDs whose conversion webhook
// config/components/crd/patches enable.
const (
	kueueNamespace      = "kueue-system"
	kueueWebhookService = "kueue-webhook-service"
	kueueWebhookSecret  = "kueue-webhook-server-cert"
	kueueCAName         = "kueue-ca"
)

var kueueConvertedCRDs = []string{"localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters"}

// kueueCertificates gives Kueue's rotator the harness's certificate in the Secret it reads (as
// CA and serving certificate: it is valid as both) and turns on the conversion webhooks of
// config/components/crd/patches, pointed at addr; undo turns them off again.
func (s *Server) kueueCertificates(addr string, cert, key []byte) (undo func(), err error) {
	undo = func() {}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": kueueNamespace}}
	if _, err := s.Get(ns); err != nil {
		if err := s.Create(ns); err != nil {
			return undo, err
		}
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": kueueWebhookSecret, "namespace": kueueNamespace},
		"data": map[string]any{"ca.crt": b64(cert), "ca.key": b64(key), "tls.crt": b64(cert), "tls.key": b64(key)}}
	if _, err := s.Get(secret); err == nil {
		if err := s.Delete(secret); err != nil {
			return undo, err
		}
	}
	if err := s.Create(secret); err != nil {
		return undo, err
	}
	conversion := func(on bool) error {
		for _, plural := range kueueConvertedCRDs {
			crd, err := s.Get(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": plural + ".kueue.x-k8s.io"}})
			if err != nil {
				return err
			}
			spec := crd["spec"].(map[string]any)
			spec["conversion"] = map[string]any{"strategy": "None"}
			if on {
				spec["conversion"] = map[string]any{"strategy": "Webhook", "webhook": map[string]any{
					"clientConfig":             map[string]any{"url": "https://" + addr + "/convert", "caBundle": b64(cert)},
					"conversionReviewVersions": []any{"v1"}}}
			}
			if err := s.Update(crd); err != nil {
				return err
			}
		}
		return nil
	}
	return func() { conversion(false) }, conversion(true)
}

// kueueJobHooks are the webhooks (m<kind>.kb.io, v<kind>.kb.io) the release's kustomization
// gives a namespace selector: those of the workloads it integrates.
var kueueJobHooks = map[string]bool{}

func init() {
	for _, kind := range strings.Fields("appwrapper deployment jaxjob job jobset leaderworkerset mpijob paddlejob pod pytorchjob " +
		"raycluster rayjob rayservice sparkapplication statefulset tfjob trainjob xgboostjob") {
		kueueJobHooks[kind] = true
	}
}
