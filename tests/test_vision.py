"""The vision actor-critic and DrQ's random shift."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rollax.networks import CNNEncoder, VisionActorCritic
from rollax.ops import random_shift


def _obs(batch=(3,), size=(32, 48)):
    key = jax.random.key(0)
    return {
        "pixels/fixed": jax.random.randint(key, (*batch, *size, 3), 0, 256).astype(jnp.uint8),
        "pixels/follow": jax.random.randint(key, (*batch, *size, 6), 0, 256).astype(jnp.uint8),
        "state": jnp.ones((*batch, 4), jnp.float32),
        "privileged_state": jnp.ones((*batch, 2), jnp.float32),
    }


@pytest.mark.parametrize("pool", ["none", "avg", "max"])
def test_encoder_shapes_for_small_and_nature_sized_images(pool):
    small = CNNEncoder.for_image((32, 48, 3), pool=pool, layer_norm=True)
    assert small.kernels == (3, 3, 3)
    x = jnp.zeros((2, 5, 32, 48, 3), jnp.uint8)
    params = small.init(jax.random.key(0), x)
    assert small.apply(params, x).shape == (2, 5, 256)


def test_pooling_averages_or_maxes_the_feature_map_over_space():
    # Without the dense layer the three modes share their parameters, so "avg" and "max"
    # must be the mean and maximum over positions of what "none" flattens.
    x = jax.random.uniform(jax.random.key(3), (4, 32, 48, 3))
    flat = CNNEncoder.for_image((32, 48, 3), dense=0)
    params = flat.init(jax.random.key(0), x)
    features = flat.apply(params, x).reshape(4, 4, 6, 32)  # 32x48 halved three times
    for pool, reduce in (("avg", jnp.mean), ("max", jnp.max)):
        pooled = CNNEncoder.for_image((32, 48, 3), dense=0, pool=pool).apply(params, x)
        np.testing.assert_allclose(pooled, reduce(features, axis=(1, 2)), rtol=1e-5, atol=1e-6)
    # Pooled features do not move when the content moves within the image (zero borders).
    image = jnp.zeros((1, 32, 48, 3)).at[:, 8:16, 8:16].set(1.0)
    moved = jnp.roll(image, (8, 16), axis=(1, 2))
    pooled = CNNEncoder.for_image((32, 48, 3), dense=0, pool="max")
    np.testing.assert_allclose(
        pooled.apply(params, image), pooled.apply(params, moved), rtol=1e-5, atol=1e-6
    )
    assert not np.allclose(flat.apply(params, image), flat.apply(params, moved))


def test_layer_norm_normalizes_each_position_over_its_channels():
    x = jax.random.uniform(jax.random.key(3), (2, 32, 48, 3))
    plain = CNNEncoder.for_image((32, 48, 3))
    normed = CNNEncoder.for_image((32, 48, 3), layer_norm=True)
    params = normed.init(jax.random.key(0), x)
    _, seen = normed.apply(params, x, capture_intermediates=True)
    outputs = [
        v["__call__"][0] for k, v in seen["intermediates"].items() if k.startswith("LayerNorm")
    ]
    assert len(outputs) == 3  # one after each convolution
    for y in outputs:  # (B, h, w, C): zero mean and unit variance over C at every position
        np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-5)
        np.testing.assert_allclose(y.var(-1), 1.0, atol=1e-3)
    # So the features ignore the images' brightness scale (biases start at zero), which
    # the plain encoder passes through (ReLU is positively homogeneous).
    np.testing.assert_allclose(normed.apply(params, 3 * x), normed.apply(params, x), atol=1e-4)
    plain_params = plain.init(jax.random.key(0), x)
    np.testing.assert_allclose(
        plain.apply(plain_params, 3 * x), 3 * plain.apply(plain_params, x), rtol=1e-4, atol=1e-5
    )


def test_nature_encoder_for_large_images():
    nature = CNNEncoder.for_image((84, 84, 3))
    assert nature.kernels == (8, 4, 3) and nature.dense == 512
    y = jnp.zeros((84, 84, 3), jnp.uint8)
    assert nature.apply(nature.init(jax.random.key(0), y), y).shape == (512,)
    board = CNNEncoder.for_image((10, 10, 4))  # MinAtar
    assert board.channels == (8,) and board.strides == (1,)
    b = jnp.zeros((3, 10, 10, 4), jnp.uint8)
    assert board.apply(board.init(jax.random.key(0), b), b).shape == (3, 128)


def test_asymmetric_actor_critic_reads_only_its_keys():
    net = VisionActorCritic(
        action_dim=2,
        discrete=True,
        actor_keys=("pixels/fixed",),
        critic_keys=("pixels/fixed", "pixels/follow", "state", "privileged_state"),
        image_shapes={"pixels/fixed": (32, 48, 3), "pixels/follow": (32, 48, 6)},
        hidden_sizes=(32,),
    )
    obs = _obs()
    params = net.init(jax.random.key(1), obs)
    # One encoder per camera, shared by actor and critic.
    assert {k for k in params["params"] if k.startswith("encoder_")} == {
        "encoder_pixels_fixed",
        "encoder_pixels_follow",
    }
    logits, _, value = net.apply(params, obs)
    assert logits.shape == (3, 2) and value.shape == (3,)

    def outputs(state, privileged):
        o = {**obs, "state": state, "privileged_state": privileged}
        logits, _, value = net.apply(params, o)
        return logits.sum(), value.sum()

    d_actor = jax.grad(lambda s, p: outputs(s, p)[0], argnums=(0, 1))(
        obs["state"], obs["privileged_state"]
    )
    d_critic = jax.grad(lambda s, p: outputs(s, p)[1], argnums=(0, 1))(
        obs["state"], obs["privileged_state"]
    )
    assert all(float(jnp.abs(g).sum()) == 0 for g in d_actor)  # the actor sees pixels only
    assert all(float(jnp.abs(g).sum()) > 0 for g in d_critic)  # the critic sees the rest too


def test_flatten_encoder_feeds_the_scaled_board_to_separate_actor_and_critic():
    board = jax.random.bernoulli(jax.random.key(0), 0.3, (5, 10, 10, 4)).astype(jnp.uint8) * 255
    net = VisionActorCritic(
        action_dim=3,
        discrete=True,
        actor_keys=("pixels/board",),
        critic_keys=("pixels/board",),
        image_shapes={"pixels/board": (10, 10, 4)},
        hidden_sizes=(16,),
        encoder="flatten",
    )
    params = net.init(jax.random.key(1), {"pixels/board": board})["params"]
    # No encoder parameters: the actor's and critic's first layers read the 400 board cells.
    assert not any(jax.tree.leaves(params.get("encoder_pixels_board", {})))
    assert params["actor_torso"]["Dense_0"]["kernel"].shape == (400, 16)
    assert params["critic_torso"]["Dense_0"]["kernel"].shape == (400, 16)
    hidden = board.reshape(5, 400).astype(jnp.float32) / 255.0
    expected = jax.nn.relu(
        hidden @ params["critic_torso"]["Dense_0"]["kernel"]
        + params["critic_torso"]["Dense_0"]["bias"][None]
    )
    value = expected @ params["critic_head"]["kernel"][:, 0] + params["critic_head"]["bias"]
    _, _, got = net.apply({"params": params}, {"pixels/board": board})
    np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-5)


def test_ppo_config_names_the_valid_image_encoders():
    from rollax.agents.ppo import PPOConfig

    with pytest.raises(ValueError, match=r"image_encoder must be 'cnn' or 'flatten', got 'mlp'"):
        PPOConfig(image_encoder="mlp").validate()


def test_random_shift_moves_images_within_the_padding_and_leaves_state_alone():
    pad = 3
    image = jnp.arange(20 * 24, dtype=jnp.int32).reshape(20, 24, 1).astype(jnp.float32)
    images = jnp.broadcast_to(image, (64, 20, 24, 1))
    obs = {"pixels/a": images, "state": jnp.arange(64.0)}
    out = random_shift(jax.random.key(0), obs, pad=pad)
    np.testing.assert_array_equal(out["state"], obs["state"])
    padded = np.pad(np.asarray(image), ((pad, pad), (pad, pad), (0, 0)), mode="edge")
    shifts = set()
    for shifted in np.asarray(out["pixels/a"]):
        # Each result is the padded image cropped at some offset within [0, 2 * pad].
        found = [
            (dy, dx)
            for dy in range(2 * pad + 1)
            for dx in range(2 * pad + 1)
            if np.array_equal(padded[dy : dy + 20, dx : dx + 24], shifted)
        ]
        assert len(found) == 1
        shifts.add(found[0])
    assert len(shifts) > 10  # offsets vary from image to image
    assert out["pixels/a"].shape == images.shape and out["pixels/a"].dtype == images.dtype
    with pytest.raises(ValueError, match="pad must be an integer >= 0"):
        random_shift(jax.random.key(0), images, pad=-1)


def test_conv_as_patches_equals_xla_convolution():
    from rollax.networks import Conv

    x = jax.random.normal(jax.random.key(0), (2, 13, 20, 3))
    for k, s in ((3, 1), (3, 2), (8, 4), (4, 2)):
        conv = Conv(5, k, s)
        params = conv.init(jax.random.key(1), x)
        expected = jax.lax.conv_general_dilated(
            x,
            params["params"]["kernel"],
            (s, s),
            "SAME",
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        np.testing.assert_allclose(conv.apply(params, x), expected, rtol=1e-4, atol=1e-4)
