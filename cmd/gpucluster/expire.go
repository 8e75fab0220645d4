package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
)

// now is the clock expire reads (a variable so tests can fix it).
var now = time.Now

// cmdExpire writes gpucluster:expiresAt into a stack file: an absolute time, so that plans stay
// reproducible, computed from a duration for convenience. Only that line of the file changes,
// and only once the changed file validates.
func cmdExpire(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("expire", stderr)
	stack := fs.String("stack", "", "the stack whose file to change: stacks/Pulumi.<stack>.yaml")
	config := fs.String("config", "", "change this stack file instead")
	in := fs.Duration("in", 0, "expire this long from now, such as 8h or 90m (rounded up to the minute)")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) > 0 || (*stack == "") == (*config == "") || *in <= 0 {
		fmt.Fprintln(stderr, "usage: gpucluster expire (--stack NAME | --config FILE) --in DURATION")
		return 2
	}
	file := *config
	if file == "" {
		cwd, _ := os.Getwd()
		if file, err = program.StackFile(cwd, *stack); err != nil {
			fmt.Fprintf(stderr, "gpucluster: %v\n", err)
			return 1
		}
	}
	at := now().UTC().Add(*in).Add(time.Minute - time.Nanosecond).Truncate(time.Minute)
	if err := setExpiry(file, at); err != nil {
		fmt.Fprintf(stderr, "gpucluster: %s: %v; nothing changed\n", relative(file), err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s: %q (GPU pools stop then; run pulumi up -s %s to apply)\n", relative(file), topology.KeyExpiresAt,
		at.Format(time.RFC3339), topology.StackName(file))
	return 0
}

func setExpiry(file string, at time.Time) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	changed, err := topology.SetConfigScalar(data, topology.KeyExpiresAt, at.Format(time.RFC3339))
	if err != nil {
		return err
	}
	// The changed file must read as the same stack with the new expiry, or nothing is written.
	st, err := topology.ParseStack(file, changed)
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			return fmt.Errorf("the file does not validate: %v", ces)
		}
		return err
	}
	if st.Expiry != at.Format(time.RFC3339) {
		return fmt.Errorf("the change did not read back as %s", at.Format(time.RFC3339))
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".gpucluster-tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(changed); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
