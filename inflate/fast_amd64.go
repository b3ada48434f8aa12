package inflate

// haveFastLoop reports that huffLoop is implemented here.
const haveFastLoop = true

// huffLoop is huffFast's decoding loop in assembly (fast_amd64.s). It
// decodes symbols from s until the output reaches s.target, fewer than
// eight input bytes are left past s.in (s.in > s.inLimit), or a symbol it
// does not decode itself comes next, and returns one of the loop* codes.
// It does not mark touched window bytes: huffFast calls it only when no
// match can read below trackEnd.
//
//go:noescape
func huffLoop(s *loopState) int
