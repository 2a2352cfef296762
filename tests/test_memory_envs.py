"""Memory environments: StatelessCartPole is CartPole with its velocities hidden, and the card
games follow POPGym's rules (checked against plain-Python references of those rules)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rollax
from _rollouts import replay_actions
from rollax.envs.memory import CountRecall, RepeatPrevious

MEMORY_IDS = ["StatelessCartPole-v1", "RepeatPrevious-v0", "CountRecall-v0"]


# --------------------------------------------------------------------------- StatelessCartPole


def _side_by_side(full, stateless, params, num_steps: int):
    """Timesteps of CartPole-v1 and StatelessCartPole-v1 (6 environments each, reset from the
    same key) fed the same actions, reset included.

    The actions come from a balancing controller that reads CartPole-v1's state, with random
    actions mixed in at rates 0, 0, 0.05, 0.2, 0.5 and 1 per environment, so that episodes of
    the first four reach the time limit and the last two fall. (A replay of a fixed sequence
    recorded beforehand cannot balance for 500 steps: a last-bit difference between two
    compiled programs grows until the recorded pushes no longer fit the pole.)
    """
    eps = jnp.array([0.0, 0.0, 0.05, 0.2, 0.5, 1.0])

    @jax.jit
    def run(key, params):
        states = (full.reset(jax.random.key(0), params), stateless.reset(jax.random.key(0), params))
        firsts = tuple(ts for _, ts in states)

        def body(states, key):
            c = states[0][0].core
            balance = c.theta + 0.5 * c.theta_dot + 0.05 * c.x + 0.1 * c.x_dot > 0
            k_action, k_coin = jax.random.split(key)
            random = jax.random.randint(k_action, (6,), 0, 2, jnp.int32)
            coin = jax.random.uniform(k_coin, (6,)) < eps
            action = jnp.where(coin, random, balance.astype(jnp.int32))
            states = tuple(
                env.step(s, action, params)
                for env, (s, _) in zip((full, stateless), states, strict=True)
            )
            return states, tuple(ts for _, ts in states)

        _, steps = jax.lax.scan(body, states, jax.random.split(key, num_steps))
        return tuple(
            jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, step)
            for first, step in zip(firsts, steps, strict=True)
        )

    return jax.tree.map(np.asarray, run(jax.random.key(3), params))


@pytest.mark.parametrize("limit", [None, 40])
def test_stateless_cartpole_is_cartpole_without_velocities(limit):
    full = rollax.make("CartPole-v1", num_envs=6)
    stateless = rollax.make("StatelessCartPole-v1", num_envs=6)
    params = full.default_params
    if limit is not None:
        params = params.replace(max_episode_steps=limit)
    ref, ours = _side_by_side(full, stateless, params, 1100)
    assert ours.obs.shape == (1101, 6, 2) and ours.obs.dtype == np.float32
    np.testing.assert_array_equal(ours.obs, ref.obs[..., [0, 2]])
    np.testing.assert_array_equal(ours.final_obs, ref.final_obs[..., [0, 2]])
    for name in ("reward", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(ref, name))
    np.testing.assert_array_equal(ours.info["episode_length"], ref.info["episode_length"])
    assert ref.terminated.any() and ref.truncated.any()  # both ways of ending, several episodes
    lengths = ours.info["episode_length"][ours.truncated]
    assert np.all(lengths == (500 if limit is None else limit))  # the time limit truncates
    np.testing.assert_array_equal(ours.reward[1:], 1.0)


def test_stateless_cartpole_keeps_cartpoles_limit_and_bounds():
    full, stateless = rollax.make("CartPole-v1"), rollax.make("StatelessCartPole-v1")
    assert stateless.default_params == full.default_params
    assert int(stateless.default_params.max_episode_steps) == 500
    space = stateless.observation_space
    assert space.shape == (2,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, full.observation_space.low[[0, 2]])
    np.testing.assert_array_equal(space.high, full.observation_space.high[[0, 2]])
    assert stateless.action_space == full.action_space


# --------------------------------------------------------------------------- POPGym references


class RepeatPreviousReference:
    """POPGym's RepeatPrevious, card by card: a hand dealt from a pile in a given order."""

    def __init__(self, suits, k: int):
        self.pile = [int(s) for s in suits]
        self.k = k
        self.scale = 1.0 / (len(self.pile) - k)
        self.hand = [self.pile.pop(0)]  # the reset deals one card

    def target(self) -> int | None:
        """The suit the next action is scored against, or None before k cards are shown."""
        return self.hand[-self.k] if len(self.hand) >= self.k else None

    def step(self, action: int) -> tuple[float, bool]:
        target = self.target()
        reward = 0.0 if target is None else (self.scale if action == target else -self.scale)
        self.hand.append(self.pile.pop(0))
        return reward, not self.pile  # the game ends with the last card


class CountRecallReference:
    """POPGym's CountRecall, pair by pair: value and query piles in given orders."""

    def __init__(self, values, queries):
        self.values = [int(v) for v in values]
        self.queries = [int(q) for q in queries]
        self.scale = 1.0 / (len(self.values) - 1)
        self.counts: dict[int, int] = {}
        self._deal()

    def _deal(self) -> None:
        value = self.values.pop(0)
        self.query = self.queries.pop(0)
        self.counts[value] = self.counts.get(value, 0) + 1

    def answer(self) -> int:
        return self.counts.get(self.query, 0)

    def step(self, action: int) -> tuple[float, bool]:
        answer = self.answer()
        self._deal()
        return (self.scale if action == answer else -self.scale), not self.values


REPEAT_SETTINGS = [  # (constructor options, k given through params instead)
    ({}, None),  # POPGym's easy
    ({"num_decks": 2, "k": 32}, None),  # POPGym's medium
    ({}, 1),  # k changed as data: repeat the card on view
]


@pytest.mark.parametrize(("options", "k_param"), REPEAT_SETTINGS)
def test_repeat_previous_rewards_follow_popgyms_rules(options, k_param):
    n = 8
    env = rollax.make("RepeatPrevious-v0", num_envs=n, autoreset_mode="disabled", **options)
    params = env.default_params
    if k_param is not None:
        params = params.replace(k=k_param)
    k, num_cards = int(params.k), env.env.num_cards
    state, ts = env.reset(jax.random.key(1), params)
    decks = np.asarray(state.core.deck)
    assert decks.shape == (n, num_cards)
    refs = [RepeatPreviousReference(deck, k) for deck in decks]
    step = jax.jit(env.step)
    rng = np.random.default_rng(0)
    returns = np.zeros(n)
    for t in range(num_cards - 1):
        obs = np.asarray(ts.obs)
        np.testing.assert_array_equal(obs[:, :4].argmax(-1), [r.hand[-1] for r in refs])
        np.testing.assert_array_equal(obs[:, :4].sum(-1), 1.0)
        np.testing.assert_array_equal(obs[:, 4], float(t == 0))
        # Right about half the time: the target where there is one, else a random suit.
        actions = [
            r.target() if r.target() is not None and rng.random() < 0.5 else rng.integers(4)
            for r in refs
        ]
        state, ts = step(state, jnp.asarray(actions, jnp.int32), params)
        expected = [r.step(a) for r, a in zip(refs, actions, strict=True)]
        np.testing.assert_allclose(ts.reward, [e[0] for e in expected], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(ts.terminated, [e[1] for e in expected])
        assert not np.asarray(ts.truncated).any()
        returns += np.asarray(ts.reward)
    assert np.asarray(ts.terminated).all()  # the deck is exhausted: every game is over
    np.testing.assert_allclose(ts.info["episode_return"], returns, atol=1e-5)
    assert np.all(np.abs(returns) <= 1 + 1e-5) and len(set(returns.round(6))) > 1


@pytest.mark.parametrize("options", [{}, {"num_decks": 2, "deck_type": "suits"}])
def test_count_recall_rewards_follow_popgyms_rules(options):
    n = 8
    env = rollax.make("CountRecall-v0", num_envs=n, autoreset_mode="disabled", **options)
    core_env = env.env
    kinds, num_cards = core_env.num_kinds, core_env.num_cards
    state, ts = env.reset(jax.random.key(2))
    values, queries = np.asarray(state.core.values), np.asarray(state.core.queries)
    assert values.shape == queries.shape == (n, num_cards)
    refs = [CountRecallReference(v, q) for v, q in zip(values, queries, strict=True)]
    step = jax.jit(env.step)
    rng = np.random.default_rng(0)
    for t in range(num_cards - 1):
        obs = np.asarray(ts.obs)
        assert obs.shape == (n, 2 * kinds + 1)
        np.testing.assert_array_equal(obs[:, kinds : 2 * kinds].argmax(-1), [r.query for r in refs])
        np.testing.assert_array_equal(obs[:, -1], float(t == 0))
        # The right count, or one off either way.
        actions = [
            min(max(r.answer() + int(rng.choice([-1, 0, 0, 1])), 0), core_env.max_count)
            for r in refs
        ]
        state, ts = step(state, jnp.asarray(actions, jnp.int32))
        expected = [r.step(a) for r, a in zip(refs, actions, strict=True)]
        np.testing.assert_allclose(ts.reward, [e[0] for e in expected], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(ts.terminated, [e[1] for e in expected])
        assert not np.asarray(ts.truncated).any()
        counts = np.asarray(state.core.counts)
        for i, r in enumerate(refs):
            assert counts[i].tolist() == [r.counts.get(c, 0) for c in range(kinds)]
    assert np.asarray(ts.terminated).all()


# --------------------------------------------------------------------------- oracles


def _play(env, policy, num_episodes: int, key):
    """Play ``num_episodes`` whole episodes in every environment of a same-step-autoreset
    batch, ``policy(history) -> action`` seeing only the observations of the current
    episode. Returns the finished episodes' returns and lengths and the done step indices."""
    n = env.num_envs
    length = env.env.num_cards - 1
    step = jax.jit(env.step)
    state, ts = env.reset(key)
    histories = [[obs] for obs in np.asarray(ts.obs)]
    returns, lengths, done_steps = [], [], []
    for t in range(num_episodes * length):
        actions = jnp.asarray([policy(h) for h in histories], jnp.int32)
        state, ts = step(state, actions)
        done = np.asarray(ts.done)
        assert not np.asarray(ts.truncated).any()
        np.testing.assert_array_equal(done, np.asarray(ts.terminated))
        if done.any():
            done_steps.append(t + 1)
            returns += np.asarray(ts.info["episode_return"])[done].tolist()
            lengths += np.asarray(ts.info["episode_length"])[done].tolist()
        for i, obs in enumerate(np.asarray(ts.obs)):
            if done[i]:
                assert obs[-1] == 1.0  # the first observation of the next episode
                histories[i] = [obs]
            else:
                assert obs[-1] == 0.0
                histories[i].append(obs)
    assert len(returns) == num_episodes * n
    return np.asarray(returns), np.asarray(lengths), done_steps


@pytest.mark.parametrize(
    ("options", "expected_length"), [({}, 51), ({"num_decks": 2, "k": 32}, 103)]
)
def test_repeat_previous_oracle_returns_one_and_always_wrong_minus_one(options, expected_length):
    env = rollax.make("RepeatPrevious-v0", num_envs=4, **options)
    k = env.env.k

    def remembered(history):
        return int(history[-k][:4].argmax()) if len(history) >= k else 0

    def oracle(history):
        return remembered(history)

    def always_wrong(history):
        return (remembered(history) + 1) % 4

    for policy, expected in ((oracle, 1.0), (always_wrong, -1.0)):
        returns, lengths, done_steps = _play(env, policy, 2, jax.random.key(3))
        np.testing.assert_allclose(returns, expected, atol=1e-5)
        np.testing.assert_array_equal(lengths, expected_length)
        assert done_steps == [expected_length, 2 * expected_length]


@pytest.mark.parametrize(
    ("options", "expected_length"), [({}, 51), ({"num_decks": 2, "deck_type": "suits"}, 103)]
)
def test_count_recall_oracle_returns_one_and_always_wrong_minus_one(options, expected_length):
    env = rollax.make("CountRecall-v0", num_envs=4, **options)
    kinds, num_actions = env.env.num_kinds, env.action_space.n

    def count(history):
        seen = np.stack(history)[:, :kinds].argmax(-1)
        query = int(history[-1][kinds : 2 * kinds].argmax())
        return int((seen == query).sum())

    def always_wrong(history):
        return (count(history) + 1) % num_actions

    for policy, expected in ((count, 1.0), (always_wrong, -1.0)):
        returns, lengths, done_steps = _play(env, policy, 2, jax.random.key(4))
        np.testing.assert_allclose(returns, expected, atol=1e-5)
        np.testing.assert_array_equal(lengths, expected_length)
        assert done_steps == [expected_length, 2 * expected_length]


def test_count_recall_answers_reach_a_full_count():
    """The largest count (every card of a kind shown) is an action: in the last steps of a
    one-deck colour game it is the answer to about half the queries."""
    env = CountRecall()
    assert env.action_space.n == env.max_count + 1 == 27
    state = env.reset_env(jax.random.key(0), env.default_params)
    for _ in range(50):
        state, _, _ = env.step_env(state, jnp.int32(0), env.default_params)
    assert int(jnp.max(state.counts)) == 26  # 51 cards shown: one colour complete


# --------------------------------------------------------------------------- fresh decks


@pytest.mark.parametrize("strategy", ["on_done", "pool", "every_step"])
def test_every_episode_deals_a_fresh_shuffled_deck(strategy):
    n, episodes = 4, 3
    repeat = rollax.make("RepeatPrevious-v0", num_envs=n, reset_strategy=strategy)
    count = rollax.make("CountRecall-v0", num_envs=n, reset_strategy=strategy)
    for env, fields in ((repeat, ("deck",)), (count, ("values", "queries"))):

        @jax.jit
        def decks(key, env=env, fields=fields):
            state, _ = env.reset(key)

            def body(state, _):
                seen = tuple(getattr(state.core, f) for f in fields)
                state, ts = env.step(state, jnp.zeros(n, jnp.int32))
                return state, (seen, ts.done)

            return jax.lax.scan(body, state, None, episodes * 51)[1]

        seen, done = decks(jax.random.key(5))
        done = np.asarray(done)
        assert done.sum() == episodes * n and done[50::51].all()
        for deck in map(np.asarray, seen):  # (steps, n, num_cards)
            # Within an episode the deck stays; each episode of each environment has its own.
            for e in range(episodes):
                assert (deck[51 * e : 51 * (e + 1)] == deck[51 * e]).all()
            firsts = deck[::51].reshape(-1, deck.shape[-1])
            assert len({row.tobytes() for row in firsts}) == episodes * n
            # Every deck is a whole deck: each kind as often as a deck holds it.
            num_kinds = deck.max() + 1
            for row in firsts:
                np.testing.assert_array_equal(np.bincount(row), 52 // num_kinds)
        if env is count:  # value and query piles are shuffled independently
            assert not np.array_equal(np.asarray(seen[0]), np.asarray(seen[1]))


# --------------------------------------------------------------------------- registry, spaces


@pytest.mark.parametrize("env_id", MEMORY_IDS)
def test_registered_and_batched_under_jit_and_vmap_inside_the_spaces(env_id):
    assert env_id in rollax.registered_envs()
    single = rollax.make(env_id)
    keys = jax.random.split(jax.random.key(6), 3)
    state, ts = jax.jit(jax.vmap(single.reset))(keys)
    actions = jax.vmap(single.action_space.sample)(keys)
    state, ts = jax.jit(jax.vmap(single.step))(state, actions)
    assert ts.obs.shape == (3, *single.observation_space.shape)
    assert ts.obs.dtype == np.float32

    env = rollax.make(env_id, num_envs=5)
    actions = jax.vmap(env.sample_actions)(jax.random.split(jax.random.key(7), 150))
    ts = replay_actions(env, jax.random.key(8), actions)
    assert ts.done.any()
    contains = jax.jit(jax.vmap(env.observation_space.contains))
    for obs in (ts.obs, ts.final_obs):
        assert obs.shape == (151, 5, *env.observation_space.shape)
        assert bool(contains(obs.reshape(-1, *env.observation_space.shape)).all())
    assert isinstance(env.action_space, rollax.spaces.Discrete)


def test_options_are_checked():
    with pytest.raises(ValueError, match="k must be an integer in"):
        RepeatPrevious(k=52)
    with pytest.raises(ValueError, match="num_decks"):
        RepeatPrevious(num_decks=0)
    with pytest.raises(ValueError, match="deck_type must be one of"):
        CountRecall(deck_type="jokers")
    assert RepeatPrevious(num_decks=3, k=64).default_params.max_episode_steps == 156


def test_maze_with_a_three_by_three_view(key):
    env = rollax.make("Maze-v0", num_envs=4, view_size=3, autoreset_mode="disabled")
    assert env.observation_space.shape == (18,)
    state, ts = env.reset(key)
    view = np.asarray(ts.obs).reshape(4, 3, 3, 2)
    assert (view[:, 1, 1, 0] == 0).all()  # the agent stands on a free square
    for action in range(4):
        state, ts = env.step(state, jnp.full(4, action, jnp.int32))
        assert ts.obs.shape == (4, 18)
        assert bool(jax.vmap(env.observation_space.contains)(ts.obs).all())
