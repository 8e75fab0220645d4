package catalog

// BusBWReference is a published nccl-tests all_reduce_perf result: the bus bandwidth one
// instance type reached over EFA with a given node count and message size. Each figure names
// its public source; no figure is extrapolated to another type, node count or size.
type BusBWReference struct {
	InstanceType string  `json:"instanceType"`
	Nodes        int     `json:"nodes"`
	Bytes        int64   `json:"bytes"`
	BusBW        float64 `json:"busbwGBps"` // out-of-place
	Source       string  `json:"source"`
}

// BusBWTolerance is the share of a reference a run must reach to pass: nccl-tests' own
// bandwidth check (-G / check_avg_bw in src/util.cu) fails below 0.9 of the expected figure.
const BusBWTolerance = 0.9

const awsomeNCCLTests = "awslabs/awsome-distributed-training, micro-benchmarks/nccl-tests/README.md (commit 7217859f)"

// awsomeB300 is a measurement AWS's NCCL/EFA review published in a commit message: all_reduce_perf
// out-of-place busbw at 16 GiB on B300 (SageMaker HyperPod's ml.p6-b300.48xlarge: the only AWS B300
// instance) under Slurm, with EFA installer 1.48, NCCL 2.30.4 and aws-ofi-nccl 1.19 and no NCCL
// tuning variables (the recipe gpucluster's jobs also run).
const awsomeB300 = "awslabs/awsome-distributed-training commit a59b4db5 (\"nccl-tests: drop unnecessary NCCL/MPI env vars per AWS NCCL/EFA review\"), its verification table"

var busBWReferences = []BusBWReference{
	{InstanceType: "p4de.24xlarge", Nodes: 2, Bytes: 2 << 30, BusBW: 78.33,
		Source: awsomeNCCLTests + ": 2 x p4de.24xlarge over EFA, Slurm srun, all_reduce_perf float sum"},
	{InstanceType: "p5.48xlarge", Nodes: 2, Bytes: 2 << 30, BusBW: 437.79,
		Source: awsomeNCCLTests + ": 2 x p5.48xlarge over EFA on EKS, MPIJob, all_reduce_perf float sum"},
	{InstanceType: "p5.48xlarge", Nodes: 2, Bytes: 16 << 30, BusBW: 487.09,
		Source: awsomeNCCLTests + ": 2 x p5.48xlarge over EFA, Slurm srun, all_reduce_perf float sum"},
	{InstanceType: "p6-b300.48xlarge", Nodes: 8, Bytes: 16 << 30, BusBW: 767.17,
		Source: awsomeB300 + ": 8 x B300 nodes, all_reduce, without the dropped variables"},
	{InstanceType: "p6-b300.48xlarge", Nodes: 32, Bytes: 16 << 30, BusBW: 764.78,
		Source: awsomeB300 + ": 32 x B300 nodes, all_reduce, without the dropped variables"},
}

// BusBWReferences are the published figures for an instance type at a node count, smallest
// message first; none when nobody published one (the report then says so, not guesses).
func BusBWReferences(instanceType string, nodes int) []BusBWReference {
	var out []BusBWReference
	for _, r := range busBWReferences {
		if r.InstanceType == instanceType && r.Nodes == nodes {
			out = append(out, r)
		}
	}
	return out
}
