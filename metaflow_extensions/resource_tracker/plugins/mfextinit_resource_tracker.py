"""Metaflow extension of resource-tracker: registers the @track_resources step decorator.

Metaflow reads this module when it is imported and puts every step decorator listed here into
its own namespace, so ``from metaflow import track_resources`` works without importing
resource_tracker. The card type ``tracked_resources`` is registered by the ``cards/``
namespace package next to this module.
"""

STEP_DECORATORS_DESC = [
    ("track_resources", ".track_resources_decorator.TrackResourcesDecorator"),
]
