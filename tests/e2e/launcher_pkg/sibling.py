VALUE = "sibling"
