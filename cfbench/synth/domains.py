"""Domain content for the synthetic generator: companies, problems, outcomes.

Every string here is content, not style: it is identical across all style
counterfactuals. Placeholders are filled from seeded facts:
``{amount}`` money, ``{date}`` a calendar date, ``{ref}`` a reference number,
``{days}`` a small count of days, ``{item}`` the product or service.
"""

from __future__ import annotations

__all__ = ["DOMAINS", "GENERIC_EXTRA", "DEFLECT_EXTRA", "PII_FIELDS"]

# Personal-data fields an agent may ask for (or wrongly volunteer).
PII_FIELDS = {
    "date of birth": ["March 3rd, 1986", "July 19th, 1979", "November 2nd, 1992", "January 27th, 1968"],
    "phone number": ["555-0142", "555-0187", "555-0113", "555-0196"],
    "home address": ["14 Alder Street", "220 Birchwood Lane", "7 Harbor View Road", "391 Quarry Hill Drive"],
    "member number": ["M-4471-2290", "M-3308-1154", "M-9021-6637", "M-5560-4418"],
}

DOMAINS: dict[str, dict] = {
    "healthcare": dict(
        companies=["Brightwell Health", "Cedar Clinic Network"],
        items=["a clinic visit", "a lab test"],
        issue="I got a bill for {amount} for {item} on {date}, and my plan is supposed to cover it.",
        explain="I can see the {amount} charge from {date}; the claim was sent without your plan details.",
        resolve="I've resubmitted the claim with your plan attached, so the {amount} charge is removed and you'll get a corrected statement within {days} days.",
        fail="The claim is locked while it's under review, so I can't change the {amount} charge today, and the bill stays as it is for now.",
        avoid="Billing questions aren't something I handle here. You'll need to call your insurer about that.",
        extra=[("Will this affect my next appointment?", "No, your next appointment is not affected."),
               ("Do I need to bring anything to my next visit?", "Just your insurance card, like always.")],
    ),
    "fintech": dict(
        companies=["Ledgerly", "Northpine Pay"],
        items=["a transfer", "a payment"],
        issue="I sent {amount} to the wrong person on {date} and I need it back.",
        explain="I can see the transfer of {amount} from {date}, reference {ref}, and it's still pending.",
        resolve="I've cancelled the pending transfer, so the {amount} goes back to your balance within {days} days.",
        fail="The transfer of {amount} already completed, and completed transfers can't be reversed from my side.",
        avoid="Mistaken transfers aren't my area. You'll have to sort that out with the person you paid.",
        extra=[("Is my card still working?", "Yes, your card is active and not affected."),
               ("Can I turn on payment alerts?", "Yes, alerts are in the app under notifications.")],
    ),
    "insurance": dict(
        companies=["Harborline Insurance", "Oakmere Mutual"],
        items=["my car claim", "my home claim"],
        issue="I filed {item} on {date} and I still haven't heard anything about the {amount} repair.",
        explain="I found the claim, reference {ref}, filed on {date} for {amount}; it was waiting on an adjuster.",
        resolve="I've assigned an adjuster and approved the {amount} repair, and the payment goes out within {days} days.",
        fail="The claim for {amount} needs an adjuster visit first, and none is available to approve it yet, so it stays open.",
        avoid="I don't deal with claims. You'll need to call the claims line yourself.",
        extra=[("Will my premium go up?", "This claim doesn't change your premium."),
               ("Can I upload photos?", "Yes, photos can be added in the claims portal.")],
    ),
    "automobile": dict(
        companies=["Ridgeway Motors", "Summit Auto Care"],
        items=["my oil change", "my brake service"],
        issue="I was charged {amount} for {item} on {date}, but the quote was lower.",
        explain="I see the invoice for {amount} from {date}, reference {ref}; an extra part was added.",
        resolve="I've removed the extra part from the invoice, and the {amount} is adjusted with a refund within {days} days.",
        fail="The invoice for {amount} was already closed by the service center, and I can't adjust closed invoices.",
        avoid="Service invoices aren't my department. You'd have to go back to the dealer.",
        extra=[("Is my warranty still valid?", "Yes, your warranty is still valid."),
               ("When is my next service due?", "Your next service is due in about six months.")],
    ),
    "education": dict(
        companies=["Lumen Online Academy", "Westbrook College"],
        items=["my course fee", "my exam fee"],
        issue="I was billed {amount} for {item} on {date}, but I dropped that course.",
        explain="I can see the {amount} charge from {date}, reference {ref}; the drop wasn't recorded.",
        resolve="I've recorded the drop and reversed the {amount} charge, and the refund arrives within {days} days.",
        fail="The drop deadline had passed before {date}, so the {amount} charge can't be reversed.",
        avoid="Fees are handled by another office. I can't help with that, you'll have to email them.",
        extra=[("Is my student account still open?", "Yes, your student account is open."),
               ("Can I still access the course notes?", "Yes, the notes stay available to you.")],
    ),
    "transportation": dict(
        companies=["Metrolink Transit", "Bluejay Rail"],
        items=["my monthly pass", "my train ticket"],
        issue="My card was charged twice for {item} on {date}, {amount} each time.",
        explain="I see two charges of {amount} on {date}, reference {ref}; one is a duplicate.",
        resolve="I've refunded the duplicate charge of {amount}, and it reaches your card within {days} days.",
        fail="Both charges of {amount} show as separate purchases, so I can't refund either one.",
        avoid="Card charges aren't something I look at. Contact your bank.",
        extra=[("Does my pass still work?", "Yes, your pass works as normal."),
               ("Can I get a receipt?", "Yes, receipts are in your account history.")],
    ),
    "utility": dict(
        companies=["Clearwater Energy", "Greenfield Power"],
        items=["my electricity bill", "my water bill"],
        issue="{item_cap} for {date} came to {amount}, which is way higher than usual.",
        explain="I see the {amount} bill for {date}, reference {ref}; it used an estimated meter reading.",
        resolve="I've replaced the estimate with your actual reading, so the bill drops and the {amount} is recalculated within {days} days.",
        fail="The bill of {amount} was based on a reading I can't replace yet, so it stays as it is for now.",
        avoid="Billing amounts aren't my job. You'll need to write to the billing team.",
        extra=[("Will my service be cut off?", "No, your service continues as normal."),
               ("Can I switch to paperless bills?", "Yes, that's in your account settings.")],
    ),
    "home_services": dict(
        companies=["Handy Haven", "TrueNorth Home Repair"],
        items=["my plumbing repair", "my appliance repair"],
        issue="The technician for {item} never showed up on {date}, and I was still charged {amount}.",
        explain="I see the booking for {date}, reference {ref}, and the {amount} charge; the visit was marked missed.",
        resolve="I've refunded the {amount} and booked a new visit, and the refund shows within {days} days.",
        fail="The {amount} charge is a late-cancellation fee under your plan, and I can't waive it.",
        avoid="Technician scheduling isn't my area. You'll have to contact the technician directly.",
        extra=[("Can I pick a morning slot?", "Yes, morning slots are available."),
               ("Will the technician call first?", "Yes, they call when they're on the way.")],
    ),
    "food_delivery": dict(
        companies=["Dashly Eats", "Forkful Delivery"],
        items=["my dinner order", "my grocery order"],
        issue="{item_cap} on {date} arrived missing half the items, and I paid {amount}.",
        explain="I see the order from {date}, reference {ref}, total {amount}; the driver marked it complete.",
        resolve="I've refunded the {amount} for the missing items, and it's back on your card within {days} days.",
        fail="The order of {amount} was marked delivered in full, and I'm not able to refund it.",
        avoid="Missing items are the restaurant's problem. You'll have to call them.",
        extra=[("Will my discount still apply next time?", "Yes, your discount is still on your account."),
               ("Can I rate the driver?", "Yes, you can rate the driver in the app.")],
    ),
    "telecom": dict(
        companies=["Skyreach Mobile", "Parallel Wireless"],
        items=["my phone plan", "my home internet"],
        issue="I was charged {amount} in roaming fees on {date}, but {item} includes roaming.",
        explain="I see {amount} in roaming fees from {date}, reference {ref}; the roaming add-on wasn't linked.",
        resolve="I've linked the roaming add-on and credited the {amount}, and the credit shows within {days} days.",
        fail="The roaming add-on started after {date}, so the {amount} in fees stands and I can't credit it.",
        avoid="Roaming fees aren't something I deal with. You'd need to go to a store.",
        extra=[("Will my number change?", "No, your number stays the same."),
               ("Can I check my data usage?", "Yes, usage is shown in the app.")],
    ),
    "retail": dict(
        companies=["Maple and Finch", "Cobalt Home Goods"],
        items=["a lamp", "a coffee maker"],
        issue="I returned {item} on {date} but never got my {amount} back.",
        explain="I see the return from {date}, reference {ref}, for {amount}; it was received at the warehouse.",
        resolve="I've pushed the refund of {amount} through, and it reaches your card within {days} days.",
        fail="The return of {amount} failed inspection, so I can't issue a refund for it.",
        avoid="Returns aren't handled on this line. You'll need to go back to the store.",
        extra=[("Can I still use my store credit?", "Yes, your store credit is still valid."),
               ("Do you have the lamp in another color?", "Yes, it comes in two other colors.")],
    ),
    "travel": dict(
        companies=["Wayfarer Trips", "Horizon Air Desk"],
        items=["my hotel booking", "my flight change"],
        issue="I cancelled {item} for {date} in time, but I was still charged {amount}.",
        explain="I see the cancellation for {date}, reference {ref}, and the {amount} charge; the cancellation was logged late.",
        resolve="I've corrected the cancellation time and refunded the {amount}, and it arrives within {days} days.",
        fail="The booking of {amount} was non-refundable, so I can't return the money.",
        avoid="Cancellations aren't my department. You'll have to call the hotel or airline.",
        extra=[("Will I keep my loyalty points?", "Yes, your points stay on your account."),
               ("Can I rebook later?", "Yes, you can rebook any time in the app.")],
    ),
}

# Neutral follow-up questions any domain can use to lengthen a transcript.
GENERIC_EXTRA = [
    ("Can I do this online next time?", "Yes, most of this can be done in your online account."),
    ("Do you need anything else from me?", "No, I have everything I need."),
    ("Will I get an email about this?", "Yes, a summary email goes to the address on file."),
    ("Are you open on weekends?", "Yes, the phone line is open on weekends too."),
    ("Is there a reference I should note down?", "The reference is on your account page."),
    ("Can someone call me back if I have questions?", "Yes, you can request a callback in your account."),
    ("Is my account otherwise in good standing?", "Yes, everything else on the account looks fine."),
    ("Can I update my contact details while I'm here?", "You can update them any time in your account."),
]

# Follow-up pairs for work-avoidance transcripts: the agent keeps deflecting.
DEFLECT_EXTRA = [
    ("Is there really nothing you can do?", "No, that's not something I can look at."),
    ("Can you at least transfer me?", "I can't transfer this kind of call."),
    ("Could you make a note on my account?", "There's nothing for me to note here."),
    ("Who should I call then?", "You'll have to find the right number yourself."),
]
