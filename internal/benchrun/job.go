// Package benchrun runs one pool's benchmark job on a live cluster, as `gpucluster bench run`
// does: it creates the job the stack derives (the same object the stack outputs), follows it
// from queued to finished, writes every pod's log into the run's directory, and deletes what it
// created, also when interrupted or out of time. Reporting on the logs is the CLI's (`bench
// report`). It reaches the cluster with kubectl, as verify does.
package benchrun

import (
	"fmt"
	"slices"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Job kinds a pool's benchmark has.
const (
	JobNCCL  = "nccl"  // the all-reduce MPIJob
	JobTrain = "train" // the TrainJob (with gpucluster:benchmarks.trainingCommand)
)

// Jobs are the job kinds bench run takes.
var Jobs = []string{JobNCCL, JobTrain}

// job is what bench run needs of a job object: how to find its pods, which pod's log is the
// run's output, and how its kind says suspended and finished.
type job struct {
	obj       map[string]any
	kind      string // "mpijob" | "trainjob": kubectl's resource
	name      string
	namespace string
	pods      string // label selector of every pod of the job
	output    string // label selector of the pod whose log is the run's output
	ranks     string // label selector of the pods that run the ranks, on the pool's nodes
	// suspend is where the job's suspension is (Kueue unsuspends a job it admits); success and
	// failure the condition types that end it.
	suspend          []string
	success, failure string
}

// mpiJobLabel is the label the MPI operator puts on every pod of an MPIJob (kubeflow/mpi-operator
// v0.8.2 pkg/controller/mpi_job_controller.go: training.kubeflow.org/job-name, job-role).
const (
	mpiJobLabel  = "training.kubeflow.org/job-name"
	mpiRoleLabel = "training.kubeflow.org/job-role"
)

// completionIndex is the label the Job controller gives an indexed Job's pods; JobSet's first
// Job's index 0 is the TrainJob's rank 0 (torchrun's node rank 0), whose log is the run's.
const completionIndex = "batch.kubernetes.io/job-completion-index"

// jobOf is the pool's job of the kind asked for, as the stack derives it.
func jobOf(stack topology.StackSpec, pool topology.PoolSpec, kind string) (*job, error) {
	if pool.Benchmark == nil {
		return nil, fmt.Errorf("pool %s has no benchmark jobs: set gpucluster:benchmarks: {enabled: true} in the stack", pool.Name)
	}
	objs, err := benchjobs.Objects(stack, pool)
	if err != nil {
		return nil, err
	}
	want := map[string]string{JobNCCL: "MPIJob", JobTrain: "TrainJob"}[kind]
	if want == "" {
		return nil, fmt.Errorf("--job %s: the jobs are %v", kind, Jobs)
	}
	i := slices.IndexFunc(objs, func(o map[string]any) bool { return o["kind"] == want })
	if i < 0 {
		return nil, fmt.Errorf("pool %s has no training job: set gpucluster:benchmarks.trainingCommand in the stack", pool.Name)
	}
	obj := objs[i]
	md := obj["metadata"].(map[string]any)
	j := &job{obj: obj, name: md["name"].(string), namespace: md["namespace"].(string)}
	switch want {
	case "MPIJob":
		j.kind, j.suspend, j.success, j.failure = "mpijob", []string{"spec", "runPolicy", "suspend"}, "Succeeded", "Failed"
		j.pods = mpiJobLabel + "=" + j.name
		j.output = j.pods + "," + mpiRoleLabel + "=launcher"
		j.ranks = j.pods + "," + mpiRoleLabel + "=worker" // the launcher runs mpirun on a system node
	default:
		j.kind, j.suspend, j.success, j.failure = "trainjob", []string{"spec", "suspend"}, "Complete", "Failed"
		j.pods = benchjobs.LabelJobSetName + "=" + j.name
		j.output = j.pods + "," + completionIndex + "=0"
		j.ranks = j.pods
	}
	return j, nil
}
