package realengine_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/test/realengine"
	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

// TestRealEngineUnplaceableDeploymentFailsUp: the kubernetes provider's await fails `pulumi up`
// when a Deployment's pods cannot all be placed (here two replicas with a required anti-affinity
// per host, on one system node), saying the Deployment never became available. (It does not
// name the scheduler's reason; the pod's PodScheduled condition does.) The Deployment's create
// timeout is 45 s instead of the provider's 10 minutes: placed or not, the scheduler decides in
// seconds.
func TestRealEngineUnplaceableDeploymentFailsUp(t *testing.T) {
	t.Parallel()
	spec := topology.StackSpec{Stack: "await"}
	spec.Cluster.SystemNodes.Count = 1
	spec.Cluster.SystemNodes.InstanceType = "m7i.large"
	server := enginetest.StartCluster(t, spec)
	kubeconfig, err := server.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	env, err := realengine.NewEnv(t.TempDir(), enginetest.ProjectDir, enginetest.NeedTools(t), server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	program := func(ctx *pulumi.Context) error {
		cfg, err := os.ReadFile(kubeconfig)
		if err != nil {
			return err
		}
		k8s, err := kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{Kubeconfig: pulumi.String(string(cfg))})
		if err != nil {
			return err
		}
		labels := pulumi.StringMap{"app": pulumi.String("spread")}
		_, err = appsv1.NewDeployment(ctx, "spread", &appsv1.DeploymentArgs{
			Metadata: &metav1.ObjectMetaArgs{Namespace: pulumi.String("default")},
			Spec: appsv1.DeploymentSpecArgs{
				Replicas: pulumi.Int(2),
				Selector: &metav1.LabelSelectorArgs{MatchLabels: labels},
				Template: corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: labels},
					Spec: corev1.PodSpecArgs{
						Containers: corev1.ContainerArray{corev1.ContainerArgs{Name: pulumi.String("c"), Image: pulumi.String("registry.k8s.io/pause:3.10")}},
						Affinity: &corev1.AffinityArgs{PodAntiAffinity: &corev1.PodAntiAffinityArgs{
							RequiredDuringSchedulingIgnoredDuringExecution: corev1.PodAffinityTermArray{corev1.PodAffinityTermArgs{
								TopologyKey:   pulumi.String("kubernetes.io/hostname"),
								LabelSelector: &metav1.LabelSelectorArgs{MatchLabels: labels},
							}},
						}},
					},
				},
			},
		}, pulumi.Provider(k8s), pulumi.Timeouts(&pulumi.CustomTimeouts{Create: "45s"}))
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := env.Stack(ctx, "dev", program)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Up(ctx, optup.ProgressStreams(&log))
	if err == nil {
		t.Fatal("pulumi up succeeded with a Deployment whose second replica has nowhere to go")
	}
	for _, want := range []string{"[MinimumReplicasUnavailable] Deployment does not have minimum availability", "Minimum number of live Pods was not attained"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the failed up does not say %q:\n%s", want, enginetest.Tail(log.String(), 30))
		}
	}
}
