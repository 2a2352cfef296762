"""Plain-Python references of multi-step targets, written from their definitions."""

import numpy as np


def reference_lambda_returns(rewards, next_values, terminated, truncated, gamma, lam):
    """G_t = r_t + gamma (1 - term_t) [(1 - l_t) V'_t + l_t G_{t+1}], l_t = 0 at an end."""
    T = len(rewards)
    gamma = np.broadcast_to(np.asarray(gamma, np.float64), (T,))
    lam = np.broadcast_to(np.asarray(lam, np.float64), (T,))
    targets = [0.0] * T
    following = 0.0  # G_{t+1}
    for t in reversed(range(T)):
        if terminated[t]:
            targets[t] = float(rewards[t])  # the episode is over: nothing to bootstrap
        else:
            ends = truncated[t] or t == T - 1  # nothing of the next episode, or past the end
            mix = 0.0 if ends else float(lam[t])
            bootstrap = (1.0 - mix) * float(next_values[t]) + mix * following
            targets[t] = float(rewards[t]) + float(gamma[t]) * bootstrap
        following = targets[t]
    return np.array(targets)


def reference_nstep(rewards, next_values, terminated, truncated, gamma, n):
    """Sum up to n rewards, stopping at an episode end or the sequence's end; bootstrap
    there unless the stop is a termination."""
    T = len(rewards)
    targets = []
    for t in range(T):
        total, scale = 0.0, 1.0
        for s in range(t, min(t + n, T)):
            total += scale * float(rewards[s])
            scale *= gamma
            if terminated[s]:
                break
            if truncated[s] or s == min(t + n, T) - 1:
                total += scale * float(next_values[s])
                break
        targets.append(total)
    return np.array(targets)
