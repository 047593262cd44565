package lab

import (
	"slices"
	"strings"
)

// Env returns the variables a program inside host r sees: WANLAB_NAME,
// WANLAB_HOST (client or server), WANLAB_ADDR4/6 (its own addresses) and
// WANLAB_PEER4/6 (the other host's).
func Env(i Info, r Role) []string {
	me, peer := i.Host(r), i.Host(r.Peer())
	return []string{
		"WANLAB_NAME=" + i.Name,
		"WANLAB_HOST=" + string(r),
		"WANLAB_ADDR4=" + me.Addr4.String(),
		"WANLAB_ADDR6=" + me.Addr6.String(),
		"WANLAB_PEER4=" + peer.Addr4.String(),
		"WANLAB_PEER6=" + peer.Addr6.String(),
	}
}

// withEnv returns env with vars replacing any variables of the same names.
func withEnv(env, vars []string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.ContainsFunc(vars, func(v string) bool { return strings.HasPrefix(v, k+"=") })
	})
	return append(out, vars...)
}
