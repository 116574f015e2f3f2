from django.urls import path

from . import views

urlpatterns = [path("add/", views.enqueue_add, name="demo-add")]
