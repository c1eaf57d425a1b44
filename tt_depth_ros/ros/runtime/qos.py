"""QoS profiles from parameters, and incompatible-QoS event logging (REP 2003 defaults).

Subscriptions default to best effort, depth 1 (latest frame wins; matches any publisher); publishers
default to reliable, depth 1-5 (matches any subscriber, RViz and depth_image_proc included). A QoS
mismatch silently delivers nothing, so both sides register an incompatible-QoS event handler that
logs which policy is at fault.
"""
from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

RELIABILITIES = ('best_effort', 'reliable')


def qos_profile(reliability: str, depth: int) -> QoSProfile:
    """KEEP_LAST `depth`, VOLATILE, with 'best_effort' or 'reliable' reliability."""
    if reliability not in RELIABILITIES:
        raise ValueError(f'reliability must be one of {RELIABILITIES}, got {reliability!r}')
    if int(depth) < 1:
        raise ValueError(f'QoS depth must be >= 1, got {depth}')
    rel = ReliabilityPolicy.RELIABLE if reliability == 'reliable' else ReliabilityPolicy.BEST_EFFORT
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(depth), reliability=rel,
                      durability=DurabilityPolicy.VOLATILE)


def _policy_name(status) -> str:
    kind = getattr(status, 'last_policy_kind', None)
    return getattr(kind, 'name', str(kind))


def _incompatible_qos_warning(logger, what: str, advice: str, on_event):
    """An incompatible-QoS event callback: one warning naming the policy, then `on_event`."""
    def cb(status) -> None:
        text = (f'incompatible QoS on {what}: policy {_policy_name(status)} '
                f'(total {status.total_count}); {advice}')
        logger.warning(text)
        if on_event:
            on_event(text)
    return cb


def subscription_events(logger, topic: str, on_event=None) -> SubscriptionEventCallbacks:
    """Event callbacks logging a requested-incompatible-QoS event on subscription `topic`."""
    return SubscriptionEventCallbacks(incompatible_qos=_incompatible_qos_warning(
        logger, f'subscription {topic!r}', 'a publisher offers a weaker QoS — e.g. a best-effort '
        'camera with a reliable subscription; set input_reliability', on_event))


def publisher_events(logger, topic: str, on_event=None) -> PublisherEventCallbacks:
    """Event callbacks logging an offered-incompatible-QoS event on publisher `topic`."""
    return PublisherEventCallbacks(incompatible_qos=_incompatible_qos_warning(
        logger, f'publisher {topic!r}', 'a subscriber requests more than offered — set '
        'output_reliability', on_event))
