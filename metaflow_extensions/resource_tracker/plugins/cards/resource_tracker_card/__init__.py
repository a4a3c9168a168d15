"""Card type ``tracked_resources`` of the resource-tracker Metaflow extension."""

from .tracked_resources_card import TrackedResourcesCard

CARDS = [TrackedResourcesCard]
