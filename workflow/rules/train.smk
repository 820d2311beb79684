# see issue: rules for train are added here
