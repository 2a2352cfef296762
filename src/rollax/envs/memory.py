"""Memory environments: partially observable tasks that an agent without memory cannot solve.

Each observation hides part of the state, so a policy that sees only the current
observation does worse than one that remembers: these are tests for recurrent or
attention-based agents.

- ``StatelessCartPole-v1`` (:class:`StatelessCartPole`): CartPole observed without its
  velocities. A memoryless policy must guess them; one that remembers the previous
  observation can difference two positions.
- ``RepeatPrevious-v0`` (:class:`RepeatPrevious`): cards are dealt one per step; the agent
  names the suit of the card shown ``k`` observations ago.
- ``CountRecall-v0`` (:class:`CountRecall`): a value card and a query card per step; the
  agent says how many value cards of the query's kind it has been shown.

The two card games follow the rules of POPGym's environments of the same names at their
"easy" settings (one deck, ``k = 4``; one deck counted by colour), reimplemented in JAX. Each
episode deals a freshly shuffled deck drawn from the reset key, and the episode ends by
termination when the deck runs out (``terminated``, never ``truncated``: nothing follows the
last card, so nothing should be bootstrapped from it). A perfect player returns exactly 1 and
a player who is always wrong -1. Two choices differ from POPGym, both for the reasons
given: observations are one-hot float32 vectors with a trailing flag that is 1 on the first
observation of an episode (so a new episode's first observation never equals the last
observation of the one before), and :class:`CountRecall` has one more action, so that every
count that can be asked for can be answered.
"""

from __future__ import annotations

import colorsys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.envs._base import Environment, EnvParams
from rollax.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from rollax.spaces import Box, Discrete

__all__ = [
    "DECK_SIZE",
    "DECK_TYPES",
    "CountRecall",
    "CountRecallParams",
    "CountRecallState",
    "RepeatPrevious",
    "RepeatPreviousParams",
    "RepeatPreviousState",
    "StatelessCartPole",
]

DECK_SIZE = 52
"""Cards per deck: 13 ranks of 4 suits, 26 of each of 2 colours."""

DECK_TYPES: dict[str, int] = {"colors": 2, "suits": 4, "ranks": 13}
"""What a card's kind is in :class:`CountRecall`, and how many kinds there are."""

# The CartPole state components a StatelessCartPole observes: cart position, pole angle.
_OBSERVED = np.array([0, 2])


class StatelessCartPole(CartPole):
    """CartPole observing cart position and pole angle only, not their velocities.

    Dynamics, rewards (1 per step), termination, resets and the 500-step time limit are
    exactly :class:`CartPole`'s (the same keys and actions give the same states); only
    :meth:`observe` differs.

    Observation: float32 ``(2,)`` = cart position, pole angle (components 0 and 2 of
    CartPole's observation), with CartPole's bounds for them.
    """

    @property
    def name(self) -> str:
        """``"StatelessCartPole"``."""
        return "StatelessCartPole"

    @property
    def observation_space(self) -> Box:
        """CartPole's space restricted to position and angle: float32 ``(2,)``."""
        full = super().observation_space
        return Box(full.low[_OBSERVED], full.high[_OBSERVED], (2,))

    def observe(self, state: CartPoleState, params: CartPoleParams) -> jax.Array:
        """Cart position and pole angle: float32 ``(2,)``."""
        return jnp.stack([state.x, state.theta])


def _shuffled_deck(key: jax.Array, num_cards: int, num_kinds: int) -> jax.Array:
    """The kinds of a freshly shuffled deck in dealing order: int32 ``(num_cards,)``.

    Each of the ``num_kinds`` kinds appears ``num_cards // num_kinds`` times, as suits,
    colours and ranks do in whole decks.
    """
    ordered = jnp.asarray(np.arange(num_cards) % num_kinds, jnp.int32)
    return jax.random.permutation(key, ordered)


def _one_hot_observation(kinds: list[tuple[jax.Array, int]], t: jax.Array) -> jax.Array:
    """One-hot codes of each ``(kind, num_kinds)`` in order, then the first-step flag."""
    parts = [jax.nn.one_hot(kind, n, dtype=jnp.float32) for kind, n in kinds]
    return jnp.concatenate([*parts, (t == 0).astype(jnp.float32)[None]])


def _palette(num_kinds: int) -> np.ndarray:
    """``num_kinds`` distinct colours (hues evenly spaced): uint8 ``(num_kinds, 3)``."""
    rgb = [colorsys.hsv_to_rgb(i / num_kinds, 0.75, 0.85) for i in range(num_kinds)]
    return np.round(np.array(rgb) * 255).astype(np.uint8)


def _card_grid(
    kinds: jax.Array, shown: jax.Array, marked: jax.Array, palette: np.ndarray, cell: int = 8
) -> jax.Array:
    """Cards drawn as a grid of squares: uint8 ``(R * cell, C * cell, 3)``.

    Args:
        kinds: int32 ``(R, C)``, each card's kind (its colour in ``palette``).
        shown: bool ``(R, C)``, cards dealt so far (drawn in their colour; others pale).
        marked: bool ``(R, C)``, cards drawn with a dark frame.
        palette: uint8 ``(num_kinds, 3)``.
        cell: Pixels per card side, a one-pixel gap included.
    """
    colors = jnp.where(shown[..., None], jnp.asarray(palette)[kinds], jnp.uint8(225))
    pixels = jnp.repeat(jnp.repeat(colors, cell, axis=0), cell, axis=1)
    marks = jnp.repeat(jnp.repeat(marked, cell, axis=0), cell, axis=1)
    local = np.arange(cell)
    gap_1d = (local == 0) | (local == cell - 1)
    ring_1d = (local == 1) | (local == cell - 2)
    rows, cols = kinds.shape
    gap = np.tile(gap_1d[:, None] | gap_1d[None, :], (rows, cols))
    ring = ~gap & np.tile(ring_1d[:, None] | ring_1d[None, :], (rows, cols))
    pixels = jnp.where(jnp.asarray(ring)[..., None] & marks[..., None], jnp.uint8(20), pixels)
    return jnp.where(jnp.asarray(gap)[..., None], jnp.uint8(255), pixels)


# --------------------------------------------------------------------------- RepeatPrevious


@pytree_dataclass
class RepeatPreviousParams(EnvParams):
    """Parameters of :class:`RepeatPrevious`.

    Attributes:
        max_episode_steps: Time limit; by default the deck's size, one step more than an
            episode lasts, so it never truncates a game.
        k: Which card to repeat: the suit of the card shown ``k`` observations ago, counting
            the current observation as 1; int32, ``1 <= k < num_cards``.
    """

    max_episode_steps: Any = np.int32(DECK_SIZE)
    k: Any = np.int32(4)


@pytree_dataclass
class RepeatPreviousState:
    """A shuffled deck and how far it has been dealt.

    Attributes:
        deck: int32 ``(num_cards,)``, the suit (0 to 3) of every card in dealing order.
        t: int32 ``()``, index in ``deck`` of the card on view (cards dealt minus one).
    """

    deck: jax.Array
    t: jax.Array


class RepeatPrevious(Environment[RepeatPreviousState, RepeatPreviousParams]):
    """Name the suit of the card shown ``k`` observations ago (POPGym's rules).

    A shuffled deck of ``num_cards = 52 * num_decks`` cards is dealt one card per
    observation: the reset shows the first card and every step the next, so an episode
    lasts ``num_cards - 1`` steps and ends by termination when the deck is exhausted.
    Before step ``t`` (counted from 1) the agent has seen cards ``0 .. t - 1``; from
    ``t = k`` on, the action is scored against the suit of card ``t - k``: reward
    ``+1 / (num_cards - k)`` if equal, ``-1 / (num_cards - k)`` if not. Steps before
    ``t = k`` give 0. Returns therefore lie in ``[-1, 1]``, 1 for a perfect memory.

    Observation: float32 ``(5,)``: one-hot suit of the card on view (entries 0 to 3), then a
    flag that is 1 on the first observation of an episode and 0 after. Actions:
    ``Discrete(4)``, a suit.

    POPGym's easy, medium and hard settings are ``(num_decks, k) = (1, 4), (2, 32),
    (3, 64)``. POPGym flags the end of the deck as a truncation; here it is a termination,
    because the game is over (a learner should not bootstrap from the last card).

    Args:
        num_decks: Decks shuffled together; sets the episode length (changes shapes).
        k: Default of ``params.k``; params can change it without recompiling, within
            ``1 <= k < num_cards``.
    """

    def __init__(self, num_decks: int = 1, k: int = 4) -> None:
        if isinstance(num_decks, bool) or not isinstance(num_decks, int) or num_decks < 1:
            raise ValueError(
                f"RepeatPrevious: num_decks must be an integer >= 1, got {num_decks!r}."
            )
        num_cards = DECK_SIZE * num_decks
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < num_cards:
            raise ValueError(
                f"RepeatPrevious: k must be an integer in [1, {num_cards}) for {num_decks} "
                f"deck(s), got {k!r}."
            )
        self.num_decks = num_decks
        self.num_cards = num_cards
        self.k = k

    @property
    def name(self) -> str:
        """``"RepeatPrevious"``."""
        return "RepeatPrevious"

    @property
    def episode_length(self) -> int:
        """Steps per episode: ``num_cards - 1``."""
        return self.num_cards - 1

    @property
    def default_params(self) -> RepeatPreviousParams:
        return RepeatPreviousParams(max_episode_steps=np.int32(self.num_cards), k=np.int32(self.k))

    @property
    def observation_space(self) -> Box:
        return Box(0.0, 1.0, (5,))

    @property
    def action_space(self) -> Discrete:
        return Discrete(4)

    def reset_env(self, key: jax.Array, params: RepeatPreviousParams) -> RepeatPreviousState:
        return RepeatPreviousState(_shuffled_deck(key, self.num_cards, 4), jnp.zeros((), jnp.int32))

    def step_env(
        self, state: RepeatPreviousState, action: jax.Array, params: RepeatPreviousParams
    ) -> tuple[RepeatPreviousState, jax.Array, jax.Array]:
        seen = state.t + 1  # cards shown so far
        scored = seen >= params.k
        target = state.deck[jnp.clip(seen - params.k, 0, self.num_cards - 1)]
        scale = 1.0 / jnp.asarray(self.num_cards - params.k, jnp.float32)
        reward = jnp.where(action == target, scale, -scale)
        reward = jnp.where(scored, reward, jnp.zeros((), jnp.float32))
        t = jnp.minimum(seen, self.num_cards - 1)
        return state.replace(t=t), reward, seen >= self.num_cards - 1

    def observe(self, state: RepeatPreviousState, params: RepeatPreviousParams) -> jax.Array:
        return _one_hot_observation([(state.deck[state.t], 4)], state.t)

    def render(self, state: RepeatPreviousState, params: RepeatPreviousParams) -> jax.Array:
        """The deck as 13-card rows, dealt cards in their suit's colour: uint8 ``(H, 104, 3)``.

        ``H = 32 * num_decks``. The card on view and the card the next action is scored
        against are framed.
        """
        index = jnp.arange(self.num_cards)
        target = state.t + 1 - params.k
        marked = (index == state.t) | (index == target)
        shown = (index <= state.t).reshape(-1, 13)
        return _card_grid(state.deck.reshape(-1, 13), shown, marked.reshape(-1, 13), _palette(4))


# --------------------------------------------------------------------------- CountRecall


@pytree_dataclass
class CountRecallParams(EnvParams):
    """Parameters of :class:`CountRecall`.

    Attributes:
        max_episode_steps: Time limit; by default the deck's size, one step more than an
            episode lasts, so it never truncates a game.
    """

    max_episode_steps: Any = np.int32(DECK_SIZE)


@pytree_dataclass
class CountRecallState:
    """Two shuffled decks, how far they have been dealt, and the counts so far.

    Attributes:
        values: int32 ``(num_cards,)``, the kind of every value card in dealing order.
        queries: int32 ``(num_cards,)``, the kind of every query card in dealing order.
        counts: int32 ``(num_kinds,)``, value cards of each kind shown so far.
        t: int32 ``()``, index of the cards on view (pairs dealt minus one).
    """

    values: jax.Array
    queries: jax.Array
    counts: jax.Array
    t: jax.Array


class CountRecall(Environment[CountRecallState, CountRecallParams]):
    """Say how many value cards of the queried kind have been shown (POPGym's rules).

    Two decks of ``num_cards = 52 * num_decks`` cards each are shuffled independently and
    dealt in pairs, one value card and one query card per observation: the reset shows the
    first pair and every step the next, so an episode lasts ``num_cards - 1`` steps and
    ends by termination when the decks are exhausted. A card's kind is its colour, suit or
    rank (``deck_type``). The action at step ``t`` (counted from 1) is scored against the
    number of value cards among ``0 .. t - 1`` (those shown so far, the current one
    included) whose kind is that of the query card on view: reward ``+1 / (num_cards - 1)``
    if the action equals it, ``-1 / (num_cards - 1)`` if not. Returns lie in ``[-1, 1]``.

    Observation: float32 ``(2 * num_kinds + 1,)``: one-hot kind of the value card on view,
    one-hot kind of the query card on view, then a flag that is 1 on the first observation
    of an episode and 0 after (``(5,)`` for colours). Actions:
    ``Discrete(num_cards // num_kinds + 1)``, a count (27 for colours). POPGym offers one
    action fewer, which leaves the count of a kind whose cards have all been shown (possible
    in the last steps) unanswerable; here every count can be answered.

    POPGym's easy, medium and hard settings are ``(num_decks, deck_type) = (1, "colors"),
    (2, "suits"), (4, "ranks")``.

    Args:
        num_decks: Decks shuffled together in each of the two piles; sets the episode length.
        deck_type: What a card's kind is: one of :data:`DECK_TYPES`.
    """

    def __init__(self, num_decks: int = 1, deck_type: str = "colors") -> None:
        if isinstance(num_decks, bool) or not isinstance(num_decks, int) or num_decks < 1:
            raise ValueError(f"CountRecall: num_decks must be an integer >= 1, got {num_decks!r}.")
        if deck_type not in DECK_TYPES:
            raise ValueError(
                f"CountRecall: deck_type must be one of {list(DECK_TYPES)}, got {deck_type!r}."
            )
        self.num_decks = num_decks
        self.deck_type = deck_type
        self.num_cards = DECK_SIZE * num_decks
        self.num_kinds = DECK_TYPES[deck_type]

    @property
    def name(self) -> str:
        """``"CountRecall"``."""
        return "CountRecall"

    @property
    def episode_length(self) -> int:
        """Steps per episode: ``num_cards - 1``."""
        return self.num_cards - 1

    @property
    def max_count(self) -> int:
        """Value cards of each kind in the deck: the largest count an action can name."""
        return self.num_cards // self.num_kinds

    @property
    def default_params(self) -> CountRecallParams:
        return CountRecallParams(max_episode_steps=np.int32(self.num_cards))

    @property
    def observation_space(self) -> Box:
        return Box(0.0, 1.0, (2 * self.num_kinds + 1,))

    @property
    def action_space(self) -> Discrete:
        return Discrete(self.max_count + 1)

    def reset_env(self, key: jax.Array, params: CountRecallParams) -> CountRecallState:
        k_values, k_queries = jax.random.split(key)
        values = _shuffled_deck(k_values, self.num_cards, self.num_kinds)
        queries = _shuffled_deck(k_queries, self.num_cards, self.num_kinds)
        counts = jnp.zeros(self.num_kinds, jnp.int32).at[values[0]].add(1)
        return CountRecallState(values, queries, counts, jnp.zeros((), jnp.int32))

    def step_env(
        self, state: CountRecallState, action: jax.Array, params: CountRecallParams
    ) -> tuple[CountRecallState, jax.Array, jax.Array]:
        answer = state.counts[state.queries[state.t]]
        scale = jnp.float32(1.0 / (self.num_cards - 1))
        reward = jnp.where(action == answer, scale, -scale)
        dealt = state.t + 1
        more = dealt <= self.num_cards - 1  # false only when stepped past the end
        t = jnp.minimum(dealt, self.num_cards - 1)
        counts = state.counts.at[state.values[t]].add(more.astype(jnp.int32))
        next_state = state.replace(counts=counts, t=t)
        return next_state, reward, dealt >= self.num_cards - 1

    def observe(self, state: CountRecallState, params: CountRecallParams) -> jax.Array:
        value, query = state.values[state.t], state.queries[state.t]
        return _one_hot_observation([(value, self.num_kinds), (query, self.num_kinds)], state.t)

    def render(self, state: CountRecallState, params: CountRecallParams) -> jax.Array:
        """Both decks as 13-card rows, value cards above query cards: uint8 ``(H, 104, 3)``.

        ``H = 64 * num_decks``. Dealt cards are drawn in their kind's colour; the pair on
        view is framed.
        """
        index = jnp.arange(self.num_cards)
        shown = jnp.tile(index <= state.t, 2).reshape(-1, 13)
        marked = jnp.tile(index == state.t, 2).reshape(-1, 13)
        kinds = jnp.concatenate([state.values, state.queries]).reshape(-1, 13)
        return _card_grid(kinds, shown, marked, _palette(self.num_kinds))
