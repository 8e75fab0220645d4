package healthgate

import "strings"

// apiCall is the shell that calls the API server as the pod's service account: call METHOD PATH
// CONTENT-TYPE DATA sets code and body. Reads SA_DIR (the mounted token's directory, for tests)
// and the service host and port the kubelet puts in every pod's environment.
const apiCall = `call() {
  sa=${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
  resp=$(curl -sS -w '\n%{http_code}' --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
    -H "Content-Type: $3" -X "$1" "https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}$2" --data "$4") || return 1
  code=${resp##*$'\n'}; body=${resp%$'\n'*}
}
`

// liftTaint is the shell that removes the node's health taint (topology.HealthTaint). Node taints
// are an atomic list (k8s.io/api core/v1: +listType=atomic): a JSON patch that tests the key at an
// index and removes that index is applied only if the test holds (HTTP 422 otherwise), so it
// removes exactly that taint and nothing another agent added meanwhile; the index is searched,
// and a missing taint is not an error (a restarted pod on a checked node). Any other answer, the
// admission policy's 403 among them (ownNodePolicy), fails it. Reads NODE_NAME and TAINT_KEY.
const liftTaint = `lift_taint() {
  for i in $(seq 0 63); do
    call PATCH "/api/v1/nodes/${NODE_NAME}" application/json-patch+json \
      "[{\"op\":\"test\",\"path\":\"/spec/taints/$i/key\",\"value\":\"$TAINT_KEY\"},{\"op\":\"remove\",\"path\":\"/spec/taints/$i\"}]" || return 1
    case "$code" in
      200) echo "removed $TAINT_KEY from $NODE_NAME"; return 0 ;;
      422) ;;
      *) echo "removing $TAINT_KEY from $NODE_NAME: HTTP $code: $body"; return 1 ;;
    esac
  done
  echo "$NODE_NAME has no $TAINT_KEY taint"
}
`

// setLabel is the shell that sets the node's health label to a check's name, or removes it
// (set_label ""), with a JSON merge patch: it touches no other label, and removing a label that
// is not there changes nothing. Reads NODE_NAME and LABEL_KEY.
const setLabel = `set_label() {
  if [ -n "$1" ]; then value="\"$1\""; else value=null; fi
  call PATCH "/api/v1/nodes/${NODE_NAME}" application/merge-patch+json "{\"metadata\":{\"labels\":{\"$LABEL_KEY\":$value}}}" || return 1
  [ "$code" = 200 ] || { echo "setting $LABEL_KEY on $NODE_NAME: HTTP $code: $body"; return 1; }
}
`

// postEvent is the shell that records an event on the node (post_event TYPE REASON MESSAGE),
// in the kubelet's shape for node events: in the default namespace, the node's name as its uid,
// which is what `kubectl describe node` looks events up by. Quotes and backslashes are dropped
// from the message, which the checks wrote. Reads NODE_NAME.
const postEvent = `post_event() {
  msg=${3//[\"\\]/}; now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  call POST "/api/v1/namespaces/` + EventNamespace + `/events" application/json "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\
\"metadata\":{\"generateName\":\"${NODE_NAME}.health-\",\"namespace\":\"` + EventNamespace + `\"},\
\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"${NODE_NAME}\",\"uid\":\"${NODE_NAME}\"},\
\"type\":\"$1\",\"reason\":\"$2\",\"message\":\"$msg\",\"source\":{\"component\":\"` + GateName + `\",\"host\":\"${NODE_NAME}\"},\
\"reportingComponent\":\"` + GateName + `\",\"reportingInstance\":\"${NODE_NAME}\",\"firstTimestamp\":\"$now\",\"lastTimestamp\":\"$now\",\"count\":1}" || return 1
  [ "$code" = 201 ] || { echo "recording the event on $NODE_NAME: HTTP $code: $body"; return 1; }
}
`

// Event reasons the gate records on a node.
const (
	ReasonPassed = "HealthCheckPassed"
	ReasonFailed = "HealthCheckFailed"
)

// decide is the shell that reads every check's result and decides: all of CHECKS passed, or the
// first that failed (a check that wrote nothing failed too: its container was cut short).
// Sets failed (the first failing check, "" when every one passed) and summary.
const decide = `decide() {
  failed=""; summary=""
  for check in $CHECKS; do
    line=$(cat "$RESULTS"/* 2>/dev/null | while read -r verdict name what; do
      if [ "$name" = "$check" ]; then echo "$verdict $what"; break; fi
    done)
    verdict=${line%% *}; what=${line#* }
    if [ -z "$line" ]; then verdict=fail; what="no result: the check did not run to its end"; fi
    echo "$check: $verdict: $what"
    if [ "$verdict" != pass ]; then
      [ -n "$failed" ] || failed=$check
      summary="${summary:+$summary; }$check: $what"
    fi
  done
}
`

// gateScript decides, then acts on the node as the pod's service account: on a pass it removes
// the health label left by an earlier failure, lifts the taint and records a Normal event; on a
// failure it labels the node with the first failing check and records a Warning event naming
// everything that failed, leaving the taint. Then it idles (a DaemonSet's pod must keep running;
// deleting it checks the node again). Any refused call fails the container, which the kubelet
// restarts: the node is never reported healthy unless it was.
func gateScript() string {
	return strings.Join([]string{
		"set -eu",
		apiCall + liftTaint + setLabel + postEvent + decide + "decide",
		`if [ -z "$failed" ]; then
  set_label ""
  lift_taint
  post_event Normal ` + ReasonPassed + ` "every health check passed: $CHECKS"
else
  set_label "$failed"
  post_event Warning ` + ReasonFailed + ` "$summary"
  echo "$NODE_NAME keeps $TAINT_KEY: $summary"
fi`,
		"exec sleep infinity",
	}, "\n")
}
