"""The TorchRL adapter: specs, partial resets, true final observations, a collector."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from tensordict import TensorDict

with warnings.catch_warnings():  # TorchRL's own deprecations, raised while it imports
    warnings.simplefilter("ignore", DeprecationWarning)
    from torchrl.collectors import Collector
    from torchrl.envs.utils import check_env_specs

from rollax.adapters.torchrl import RollaxEnv

pytestmark = [
    pytest.mark.extra("torchrl"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:torchrl"),
]


@pytest.mark.parametrize(
    "env_id",
    [
        "CartPole-v1",
        "Pendulum-v1",
        pytest.param(
            "playground/CartpoleBalance",
            marks=[
                pytest.mark.extra("playground"),
                pytest.mark.filterwarnings("ignore:JAXopt is no longer maintained"),
                pytest.mark.filterwarnings("ignore:Brax System"),
            ],
        ),
    ],
)
def test_passes_torchrl_check_env_specs(env_id):
    check_env_specs(RollaxEnv(env_id, 4), break_when_any_done="both")


def test_partial_reset_touches_only_the_masked_environments():
    # Two identical batches; one resets environments 0 and 2 through "_reset", then both step.
    twins = [RollaxEnv("CartPole-v1", 4, seed=3) for _ in range(2)]
    push = torch.ones(4, dtype=torch.int64)
    tds = [env.reset() for env in twins]
    for _ in range(5):
        tds = [env.step(td.set("action", push))["next"] for env, td in zip(twins, tds, strict=True)]
    mask = torch.tensor([True, False, True, False])
    fresh = twins[0].reset(TensorDict({"_reset": mask.reshape(4, 1)}, batch_size=[4]))
    assert bool((fresh["observation"][mask].abs() <= 0.05).all())  # fresh CartPole starts
    a, b = (env.step(td.set("action", push))["next", "observation"] for env, td in
            zip(twins, [fresh, tds[1]], strict=True))  # fmt: skip
    torch.testing.assert_close(a[~mask], b[~mask])  # the others went on untouched
    assert not torch.allclose(a[mask], b[mask])


def test_next_observation_at_an_episode_end_is_the_true_final_one():
    env = RollaxEnv("CartPole-v1", 3, seed=1)
    td = env.reset()
    for _ in range(100):
        td = env.step(td.set("action", torch.ones(3, dtype=torch.int64)))
        nxt = td["next"]
        if bool(nxt["done"].any()):
            ended = nxt["done"][:, 0]
            final = nxt["observation"][ended]
            # CartPole ends past 12 degrees or 2.4 units: a reset observation could not.
            assert bool(((final[:, 2].abs() > 0.2094) | (final[:, 0].abs() > 2.4)).all())
            assert bool(nxt["terminated"][ended].all()) and not bool(nxt["truncated"].any())
            break
        td = nxt
    else:
        raise AssertionError("no episode ended")


def test_collector_with_step_and_maybe_reset():
    env = RollaxEnv("CartPole-v1", 8)
    collector = Collector(env, policy=None, frames_per_batch=256, total_frames=1024)
    frames, episodes = 0, 0
    for batch in collector:
        frames += batch.numel()
        episodes += int(batch["next", "done"].sum())
        assert np.isfinite(batch["next", "observation"].numpy()).all()
    collector.shutdown()
    assert frames == 1024 and episodes > 0


def test_dict_observations_become_nested_entries_with_their_dtypes():
    env = RollaxEnv("PixelCartPole-v1", 3, height=16, width=32, cameras=("fixed", "follow"),
                    state=True)  # fmt: skip
    check_env_specs(env, break_when_any_done="both")
    rollout = env.rollout(5, break_when_any_done=False)
    fixed = rollout["next", "pixels", "fixed"]
    assert fixed.dtype == torch.uint8 and fixed.shape == (3, 5, 16, 32, 3)
    assert rollout["pixels", "follow"].shape == (3, 5, 16, 32, 3)
    assert rollout["state"].dtype == torch.float32 and rollout["state"].shape == (3, 5, 4)
    # The state entry is CartPole's state: the cart moves as the pixels say it does.
    assert not torch.equal(rollout["state"][:, 0], rollout["next", "state"][:, -1])
