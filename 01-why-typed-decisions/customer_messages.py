"""The customer messages that post 01 sends.

All four are BANKING77 training messages in the calibration split (the first
of their intent there, see datasets/README.md), so their true intents are
known: card_arrival, fiat_currency_support, card_delivery_estimate and
supported_cards_and_currencies.
"""

STILL_WAITING = "I am still waiting on my card?"
FIAT = "I need assistance with understanding which fiat currencies that you support."
DELIVERY_TO_US = "How long is the delivery time to the US?"
# label_list.py's model invented a label for this one; the typed decision gets it wrong, with a low confidence.
AMERICAN_EXPRESS = "Help me use American Express to add money to the account."

FREE_TEXT = (STILL_WAITING, FIAT, DELIVERY_TO_US)
TYPED = (STILL_WAITING, FIAT, DELIVERY_TO_US, AMERICAN_EXPRESS)
